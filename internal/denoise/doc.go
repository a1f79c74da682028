// Package denoise is the clustering noise-URL filter of SPEC §2 (S311–S314)
// and the URL similarity it rests on.
//
// # Similarity
//
// The similarity of two URLs is the SPEC's mean of LCS(u1,u2)/len(u1) and
// LCS(u1,u2)/len(u2). The longest common subsequence is not computed with
// the dynamic programme the document shows (kept as lcsDP for the tests)
// but with the bit-parallel algorithm of Allison and Dix in Hyyrö's form:
// one machine-word addition per byte of the second string and 64 bytes of
// the first (LCS, Pattern). Strings are capped at MaxLen bytes (default
// 256), so a comparison costs at most 4 words × 256 steps whatever the URL.
// A Pattern keeps the match masks of a cluster leader for the many
// comparisons made against it.
//
// # Skeletons
//
// URLs are compared as skeletons (Skeleton): path and query keys,
// lower-case, digit runs and long hexadecimal runs masked as "#", query and
// path-parameter values masked. "/s/12/a/3.html;jsessionid=9F3A" becomes
// "/s/#/a/#.html;jsessionid=#". Masking makes the LCS measure structure,
// which is what the document says it is for, and turns the millions of
// URLs of a big site into a few thousand distinct skeletons, clustered once.
//
// # The passes (SPEC §2 S311–S314)
//
//   - S311 (map): SplitBlocks groups URLs by registrable domain (BlockKey).
//   - S312 (map): Filter.Block clusters a block single-pass: each distinct
//     skeleton joins the most similar of the most recent MaxLeaders cluster
//     leaders when that similarity reaches ClusterThreshold, else it leads a
//     new cluster.
//   - S313: every skeleton gets a noise score, its highest similarity to a
//     known noise sample. Whole-URL samples are compared with the whole
//     skeleton; component samples (a path segment such as "calendar", a
//     path parameter such as ";jsessionid=", a query key such as "?utm_source=")
//     with each component of that kind, so that a short noise component
//     is found in a long URL. A cluster whose URL-weighted mean score reaches
//     NoiseThreshold is a noise cluster: its members are removed unless their
//     own score deviates below the threshold by more than Deviation. In the
//     other clusters, members scoring at least NoiseThreshold deviate from
//     their cluster and are removed as outliers.
//   - S312/S313 (reduce): Merge concatenates the blocks' results; S314 (the
//     storing of the cleaned URLs) is the caller's (package layered writes
//     them per round).
//
// BuiltinSamples covers session ids, tracking parameters, calendars and
// beacons; ParseSamples reads more from a file, one per line.
package denoise

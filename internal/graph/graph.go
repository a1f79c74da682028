package graph

import (
	"fmt"
	"math"
	"slices"
)

// Graph is a directed graph compacted to integer ids in CSR (compressed
// sparse row) form: the out-links of node u are Targets[Offsets[u]:Offsets[u+1]],
// sorted ascending, without duplicates or self-loops. Names maps an id to its
// URL (page graph) or host name (host graph); Names is sorted, so ids follow
// the names' byte order. A Graph is immutable once built; it is safe for
// concurrent reads.
type Graph struct {
	Names   []string
	Offsets []uint64 // len(Names)+1 entries, Offsets[0] = 0, non-decreasing
	Targets []uint32 // Offsets[len(Names)] entries, each < len(Names)
}

// N returns the number of nodes.
func (g *Graph) N() int { return len(g.Names) }

// M returns the number of edges.
func (g *Graph) M() int { return len(g.Targets) }

// Out returns the out-links of node u. The slice aliases the graph's memory:
// callers must not modify it.
func (g *Graph) Out(u int) []uint32 { return g.Targets[g.Offsets[u]:g.Offsets[u+1]] }

// OutDegree returns the number of out-links of node u.
func (g *Graph) OutDegree(u int) int { return int(g.Offsets[u+1] - g.Offsets[u]) }

// ID returns the id of name, or -1 when the graph has no such node. It runs a
// binary search over the sorted names.
func (g *Graph) ID(name string) int {
	i, ok := slices.BinarySearch(g.Names, name)
	if !ok {
		return -1
	}
	return i
}

// Validate checks the CSR invariants documented on Graph and returns an error
// saying which one is broken.
func (g *Graph) Validate() error {
	n := len(g.Names)
	if len(g.Offsets) != n+1 {
		return fmt.Errorf("offsets has %d entries, want %d (nodes+1)", len(g.Offsets), n+1)
	}
	if g.Offsets[0] != 0 {
		return fmt.Errorf("offsets[0] is %d, want 0", g.Offsets[0])
	}
	if g.Offsets[n] != uint64(len(g.Targets)) {
		return fmt.Errorf("offsets[%d] is %d, want the edge count %d", n, g.Offsets[n], len(g.Targets))
	}
	for u := 0; u < n; u++ {
		lo, hi := g.Offsets[u], g.Offsets[u+1]
		if hi < lo {
			return fmt.Errorf("offsets decrease at node %d", u)
		}
		for k := lo; k < hi; k++ {
			t := g.Targets[k]
			if int(t) >= n {
				return fmt.Errorf("edge %d of node %d points to %d, beyond the %d nodes", k-lo, u, t, n)
			}
			if int(t) == u {
				return fmt.Errorf("node %d links to itself", u)
			}
			if k > lo && g.Targets[k-1] >= t {
				return fmt.Errorf("out-links of node %d are not strictly ascending", u)
			}
		}
	}
	for i := 1; i < n; i++ {
		if g.Names[i-1] >= g.Names[i] {
			return fmt.Errorf("names %d and %d are not strictly ascending", i-1, i)
		}
	}
	return nil
}

// FromAdjacency builds a Graph from names and an adjacency list given by
// index (adj[u] lists the targets of names[u]). Names need not be sorted or
// unique-checked by the caller: they are sorted here and ids renumbered;
// duplicate names are an error. Self-loops and repeated edges are dropped.
func FromAdjacency(names []string, adj [][]int) (*Graph, error) {
	if len(adj) != len(names) {
		return nil, fmt.Errorf("cannot build graph: %d adjacency lists for %d names", len(adj), len(names))
	}
	n := len(names)
	if uint64(n) > math.MaxUint32 {
		return nil, fmt.Errorf("cannot build graph: %d nodes exceed the 32-bit id space", n)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case names[a] < names[b]:
			return -1
		case names[a] > names[b]:
			return 1
		}
		return 0
	})
	newID := make([]uint32, n)
	g := &Graph{Names: make([]string, n), Offsets: make([]uint64, n+1)}
	for i, old := range order {
		if i > 0 && names[old] == g.Names[i-1] {
			return nil, fmt.Errorf("cannot build graph: name %q appears twice", names[old])
		}
		g.Names[i] = names[old]
		newID[old] = uint32(i)
	}
	var buf []uint32
	for i, old := range order {
		buf = buf[:0]
		for _, t := range adj[old] {
			if t < 0 || t >= n {
				return nil, fmt.Errorf("cannot build graph: node %q links to index %d, beyond the %d nodes", names[old], t, n)
			}
			if nt := newID[t]; int(nt) != i {
				buf = append(buf, nt)
			}
		}
		slices.Sort(buf)
		buf = slices.Compact(buf)
		g.Targets = append(g.Targets, buf...)
		g.Offsets[i+1] = uint64(len(g.Targets))
	}
	return g, nil
}

// Transpose returns the in-link CSR of g: the sources of the links into node
// v are src[off[v]:off[v+1]], ascending (the order a pull iteration sums
// them in). It uses 4 bytes per edge and 8 per node.
func (g *Graph) Transpose() (off []uint64, src []uint32) {
	n := g.N()
	off = make([]uint64, n+1)
	for _, t := range g.Targets {
		off[t+1]++
	}
	for v := 0; v < n; v++ {
		off[v+1] += off[v]
	}
	src = make([]uint32, len(g.Targets))
	next := make([]uint64, n)
	copy(next, off[:n])
	for u := 0; u < n; u++ {
		for _, t := range g.Targets[g.Offsets[u]:g.Offsets[u+1]] {
			src[next[t]] = uint32(u)
			next[t]++
		}
	}
	return off, src
}

package analysis

import "github.com/go-ego/gse"

// NewWithLoader returns an Analyzer whose dictionary comes from load, so
// tests can count loads and fail them without loading the real
// dictionaries.
func NewWithLoader(load func() (*gse.Segmenter, error)) *Analyzer { return newAnalyzer(load) }

// Package archtest holds no code: its test enforces the import rules that
// keep the package picture of ARCHITECTURE.md true (go list -deps over the
// production code, tests excluded).
package archtest

//go:build !unix

package state

import "os"

// mapBoltFile reads the file at path for walkBoltFile (no memory map on
// this system).
func mapBoltFile(path string) (data []byte, unmap func(), err error) {
	data, err = os.ReadFile(path)
	return data, func() {}, err
}

//go:build !unix

package store

import "os"

// Without flock the lock is advisory only: LockDir always succeeds.
func tryLock(*os.File) (bool, error)   { return true, nil }
func tryShared(*os.File) (bool, error) { return true, nil }
func unlock(*os.File) error            { return nil }

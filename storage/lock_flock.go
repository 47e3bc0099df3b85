//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package storage

import (
	"os"
	"syscall"
)

var errWouldBlock = syscall.EWOULDBLOCK

// flock takes an exclusive flock on f without waiting. flock locks belong
// to the open file description, so a second open of the file in the same
// process conflicts too.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

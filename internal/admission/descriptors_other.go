//go:build !unix

package admission

import "errors"

// RaiseDescriptors reports no limit where the system has none to read.
func RaiseDescriptors() (limit, hard uint64, err error) {
	return 0, 0, errors.New("descriptor limits are not read on this system")
}

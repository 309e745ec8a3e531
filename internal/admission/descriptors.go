//go:build unix

package admission

import "syscall"

// RaiseDescriptors raises the process's soft limit on open descriptors to
// its hard limit (a process may, unprivileged) and returns the limit in
// force then, with the hard limit. Go raises it at start since 1.19 too;
// this says what it came to, for the start line and ConnsFor.
func RaiseDescriptors() (limit, hard uint64, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, err
	}
	if r.Cur < r.Max {
		raised := r
		raised.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			r = raised
		}
	}
	return r.Cur, r.Max, nil
}

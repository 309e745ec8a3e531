package heraldtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes on a new directory under t.TempDir()
// and returns the directory; it is unmounted when the test ends. A test
// puts a database there to see what herald does when its disk fills up.
// Mounting needs root; without it (or without mount) the test skips, and
// fails under CI=true, whose runner is root.
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	_, err := exec.LookPath("mount")
	SkipUnless(t, os.Geteuid() == 0 && err == nil, "mounting a small filesystem needs root and mount(8)")
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput()
	SkipUnless(t, err == nil, fmt.Sprintf("mount -t tmpfs failed (%v): %s", err, out))
	// Registered after t.TempDir's own cleanup, so it runs first: the
	// directory is unmounted before it is removed.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file in dir until its filesystem has no space left, and
// returns a function that removes it again (also called when the test
// ends, if the test did not).
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	// Large blocks first, then single bytes, for the last blocks may have
	// been cut short: full means the filesystem refuses even one byte.
	block := make([]byte, 64<<10)
	for _, n := range []int{len(block), 1} {
		for {
			_, err := f.Write(block[:n])
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				f.Close()
				t.Fatalf("fill %s: %v", dir, err)
			}
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fill %s: %v", dir, err)
	}
	removed := false
	free = func() {
		if removed {
			return
		}
		removed = true
		if err := os.Remove(path); err != nil {
			t.Errorf("free %s: %v", dir, err)
		}
	}
	t.Cleanup(free)
	return free
}

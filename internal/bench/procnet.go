package bench

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// socketOwner finds which of pids holds the client end of the loopback TCP
// connection from remote to local (as the receiver sees it: remote is the
// sender's address). It reads /proc/net/tcp for the socket's inode and each
// process's file descriptors for the one that is that socket: the receiver
// thus tells which herald process made each delivery without herald saying
// so. It returns -1 when none does (the connection closed first, or it is
// not one of pids').
func socketOwner(remote, local string, pids []int) int {
	inode := socketInode(remote, local)
	if inode == "" {
		return -1
	}
	want := "socket:[" + inode + "]"
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + "/" + fd.Name()); err == nil && l == want {
				return pid
			}
		}
	}
	return -1
}

// socketInode returns the inode of the IPv4 socket whose local address is
// from and whose peer is to, from /proc/net/tcp; "" if there is none.
func socketInode(from, to string) string {
	f, t := procAddr(from), procAddr(to)
	if f == "" || t == "" {
		return ""
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		x := strings.Fields(line)
		if len(x) > 9 && x[1] == f && x[2] == t {
			return x[9]
		}
	}
	return ""
}

// procAddr writes an IPv4 host:port as /proc/net/tcp does: the address's
// four bytes as a little-endian word in hex, a colon, the port in hex.
func procAddr(hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return ""
	}
	ip := net.ParseIP(host).To4()
	p, err := strconv.Atoi(port)
	if ip == nil || err != nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], p)
}

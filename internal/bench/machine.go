package bench

import (
	"os"
	"strconv"
	"strings"
)

// MachineCPU is where the machine's CPU time went over a scenario, from its
// first call to its last receipt, in seconds per 1,000 deliveries: so that
// a run says whether herald was short of CPU or of work, and what the
// bench's own driver and receivers took from the same cores. Busy is every
// process's time, herald's and the database's included; what is left of it
// beside herald, the database and the bench is the rest of the machine.
type MachineCPU struct {
	Bench  float64 `json:"benchSecondsPer1000"`  // the bench process: its API clients and receivers
	Busy   float64 `json:"busySecondsPer1000"`   // every process on the machine
	Idle   float64 `json:"idleSecondsPer1000"`   // no process had work, IOWait included
	IOWait float64 `json:"ioWaitSecondsPer1000"` // idle while a disk write or read was outstanding
	Stolen float64 `json:"stolenSecondsPer1000"` // a hypervisor gave the cores to another machine
}

// cpuTimes is the machine's CPU seconds so far, summed over its cores, and
// the bench process's own.
type cpuTimes struct {
	busy, idle, iowait, stolen, bench float64
	ok                                bool
}

// readCPUTimes reads the first line of /proc/stat (user, nice, system,
// idle, iowait, irq, softirq, steal, in USER_HZ ticks) and the bench's own
// /proc entry.
func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}
	}
	var t [8]float64
	for i := range t {
		t[i], _ = strconv.ParseFloat(f[i+1], 64)
		t[i] /= 100 // USER_HZ is 100 on Linux
	}
	self, ok := procCPU(os.Getpid(), false)
	return cpuTimes{busy: t[0] + t[1] + t[2] + t[5] + t[6], idle: t[3] + t[4], iowait: t[4], stolen: t[7], bench: self, ok: ok}
}

// since is where the machine's CPU went from c0 to c, per 1,000 of n
// deliveries; nil when either reading failed or nothing was delivered.
func (c cpuTimes) since(c0 cpuTimes, n int) *MachineCPU {
	if !c.ok || !c0.ok || n <= 0 {
		return nil
	}
	per := func(a, b float64) float64 { return (a - b) / float64(n) * 1000 }
	return &MachineCPU{Bench: per(c.bench, c0.bench), Busy: per(c.busy, c0.busy), Idle: per(c.idle, c0.idle), IOWait: per(c.iowait, c0.iowait), Stolen: per(c.stolen, c0.stolen)}
}

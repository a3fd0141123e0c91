package server

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReadRSS reads a process's resident memory from /proc/<pid>/status: its
// current VmRSS and its peak VmHWM, as "VmRSS: N kB, VmHWM: N kB".
func ReadRSS(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", err
	}
	var fields []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
			fields = append(fields, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(fields) == 0 {
		return "", fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return strings.Join(fields, ", "), nil
}

// Usage is what a process has used so far: its peak resident memory, its
// resident memory now and the CPU time it spent (user and system).
type Usage struct {
	PeakRSSKiB int64         `json:"peakRSSKiB"`
	RSSKiB     int64         `json:"rssKiB"`
	CPU        time.Duration `json:"cpu"`
}

// clockTicks is the unit of /proc/<pid>/stat's times, USER_HZ: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// ReadUsage reads a running process's Usage from /proc/<pid>/status (VmHWM,
// VmRSS) and /proc/<pid>/stat (utime, stime).
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		dst := map[string]*int64{"VmHWM:": &u.PeakRSSKiB, "VmRSS:": &u.RSSKiB}[f[0]]
		if dst == nil {
			continue
		}
		if *dst, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return u, fmt.Errorf("/proc/%d/status: %s: %w", pid, l, err)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return u, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	u.CPU = time.Duration(ticks) * time.Second / clockTicks
	return u, nil
}

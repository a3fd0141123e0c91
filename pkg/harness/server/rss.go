package server

import (
	"fmt"
	"os"
	"strings"
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

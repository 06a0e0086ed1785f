package pglocal

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSweepStale: a start removes the cluster directories a killed process
// left (owner and postmaster gone) and nothing else: not a live owner's,
// not one whose postmaster still runs, not one without an owner file.
func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := strconv.Itoa(done.ProcessState.Pid()), strconv.Itoa(os.Getpid())
	for name, files := range map[string]map[string]string{
		"gosync-pg-dead":        {ownerFile: dead},
		"gosync-pg-dead-pm-off": {ownerFile: dead, "data/postmaster.pid": dead + "\n/data\n"},
		"gosync-pg-live":        {ownerFile: live},
		"gosync-pg-dead-pm-on":  {ownerFile: dead, "data/postmaster.pid": live + "\n/data\n"},
		"gosync-pg-no-owner":    {"postgres.log": ""},
		"other-dead":            {ownerFile: dead},
	} {
		for f, body := range files {
			path := filepath.Join(tmp, name, f)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sweepStale(tmp)
	for name, want := range map[string]bool{"gosync-pg-dead": false, "gosync-pg-dead-pm-off": false, "gosync-pg-live": true,
		"gosync-pg-dead-pm-on": true, "gosync-pg-no-owner": true, "other-dead": true} {
		_, err := os.Stat(filepath.Join(tmp, name))
		if got := err == nil; got != want {
			t.Errorf("%s: kept %v, want %v", name, got, want)
		}
	}
}

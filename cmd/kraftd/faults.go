package main

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/kraftquorum/kraft/storage"
)

// Fault injection for drills and tests (docs/operations.md, "A slow
// disk"): KRAFTD_SYNC_DELAY=D (a Go duration) makes every sync of the log
// take D longer, as a slow or failing disk would. Unset, the log is used
// as it is.
const syncDelayEnv = "KRAFTD_SYNC_DELAY"

// slowSyncLog is a log whose syncs sleep first.
type slowSyncLog struct {
	storage.Log
	delay time.Duration
}

func (l slowSyncLog) Sync() error {
	time.Sleep(l.delay)
	return l.Log.Sync()
}

// withFaults wraps lg with the faults the environment asks for.
func withFaults(lg storage.Log, logger *log.Logger) (storage.Log, error) {
	v := os.Getenv(syncDelayEnv)
	if v == "" {
		return lg, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return lg, fmt.Errorf("%s=%q: want a duration such as 500ms", syncDelayEnv, v)
	}
	logger.Printf("kraftd: fault injection: %s=%v: every sync of the log takes %v longer", syncDelayEnv, d, d)
	return slowSyncLog{Log: lg, delay: d}, nil
}

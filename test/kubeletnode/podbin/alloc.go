package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// alloc is a YARN executor whose memory grows: mib MiB of touched memory
// at rate MiB/s, then held until it is killed. Like a JVM (a Spark or
// MapReduce task), it exits 143 at SIGTERM, while growing or holding, so
// that its NodeManager reports a kill the same way whenever it lands (it
// returned 0 once grown: EXITED_WITH_SUCCESS for a kill).
func alloc(args []string) error {
	term := terminated()
	go func() {
		<-term
		os.Exit(128 + 15)
	}()
	fs := flag.NewFlagSet("alloc", flag.ContinueOnError)
	mib := fs.Int("mib", 256, "MiB to allocate and touch")
	rate := fs.Int("rate", 128, "MiB per second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var chunks [][]byte
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	step := max(*rate/10, 1)
	for got := 0; got < *mib; got += step {
		<-tick.C
		c := make([]byte, step<<20)
		for i := 0; i < len(c); i += 4096 {
			c[i] = 1
		}
		chunks = append(chunks, c)
	}
	fmt.Printf("alloc: holding %d MiB\n", len(chunks)*step)
	select {} // until SIGTERM (exit 143) or SIGKILL
}

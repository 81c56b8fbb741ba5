package main

import (
	"flag"
	"fmt"
	"time"
)

// alloc is a YARN executor whose memory grows: mib MiB of touched memory
// at rate MiB/s, then held until it is killed.
func alloc(args []string) error {
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
	<-terminated()
	return nil
}

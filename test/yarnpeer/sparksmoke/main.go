// Command sparksmoke runs the tests' Spark job undisturbed on a real-YARN
// peer with the DefaultContainerExecutor (no root, no cgroups, no
// koordlet): a check of the Spark engine's wiring against a Hadoop version
// (the e2e rows need root and run on 3.5.0). Run from the repository top
// after make deps-yarn:
//
//	go run ./test/yarnpeer/sparksmoke [-hadoop 3.3.6]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/test/yarnpeer"
)

func main() {
	version := flag.String("hadoop", yarnpeer.Hadoop35, "the Hadoop version (one of the peer's builds)")
	flag.Parse()
	if err := run(*version); err != nil {
		fmt.Fprintln(os.Stderr, "sparksmoke:", err)
		os.Exit(1)
	}
}

func run(version string) error {
	if !slices.Contains(yarnpeer.Versions, version) {
		return fmt.Errorf("-hadoop %s: one of %v", version, yarnpeer.Versions)
	}
	top, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := yarnpeer.Built(top, version); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "sparksmoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := yarnpeer.Start(ctx, yarnpeer.Options{Top: top, Hadoop: version, Kind: yarnpeer.DCE, Dir: dir})
	if err != nil {
		return err
	}
	defer p.Stop()
	job, err := p.RunSparkJob(yarnpeer.SparkJob{Name: "smoke", Queue: "default", Partitions: 2, HoldMB: 64, Seconds: 5, Executors: 2})
	if err != nil {
		return err
	}
	res, err := job.Wait(ctx)
	if err != nil || res.FinalStatus != "SUCCEEDED" || !res.Events.Succeeded() {
		fmt.Fprintf(os.Stderr, "spark-submit output:\n%s\n", job.Output())
		if err == nil {
			err = fmt.Errorf("%s: %s %s", res.AppID, res.State, res.FinalStatus)
		}
		return err
	}
	fmt.Printf("Hadoop %s: %s %s %s in %s; job time %s; executors added %d, removed %d; tasks %d, failures %d\n",
		version, res.AppID, res.State, res.FinalStatus, res.Elapsed.Round(time.Second), res.Events.JobTime,
		len(res.Events.Added), len(res.Events.Removed), res.Events.Tasks, len(res.Events.Failures))
	return nil
}

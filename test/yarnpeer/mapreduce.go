package yarnpeer

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// MRClassPath is the MapReduce engine's class path for a Hadoop version:
// Hadoop's job client, MRAppMaster and task JVM (mr-lib, built by
// test/yarn/build.sh from test/yarn/mr/pom.xml).
func MRClassPath(top, version string) string {
	return filepath.Join(BuildDir(top, version), "mr-lib", "*")
}

// SleepJob is a run of Hadoop's own SleepJob (the jobclient's test jar,
// "hadoop jar … sleep"): a map-only MapReduce job of Maps maps, each
// sleeping MapMillis in a task JVM that first touches HeapMB of heap, in
// containers of ContainerMB.
type SleepJob struct {
	Name             string
	User, Queue      string
	Maps, MapMillis  int
	ContainerMB      int
	HeapMB           int
	MaxAttempts      int // mapreduce.map.maxattempts (0: Hadoop's 4)
	AMContainerMB    int // 0: 512
	ExtraJobSettings []string
}

// MRJob is a job client running a SleepJob.
type MRJob struct {
	*client
}

// RunSleepJob starts the job client (a JVM on the MapReduce class path and
// the cluster's client configuration) for job; it returns at once.
func (p *Peer) RunSleepJob(job SleepJob) (*MRJob, error) {
	if job.AMContainerMB == 0 {
		job.AMContainerMB = 512
	}
	if job.MaxAttempts == 0 {
		job.MaxAttempts = 4
	}
	opens := strings.Join(JVMOpens, " ")
	staging := filepath.Join(p.opts.Dir, "mr-staging")
	cp := filepath.Join(p.opts.Dir, "conf") + ":" + MRClassPath(p.opts.Top, p.opts.Hadoop)
	sets := []string{
		"mapreduce.framework.name=yarn",
		"fs.defaultFS=file:///",
		"mapreduce.job.name=" + job.Name,
		"mapreduce.job.queuename=" + job.Queue,
		"yarn.app.mapreduce.am.staging-dir=" + staging,
		// The containers' class path: the engine's jars and the cluster's
		// client configuration (the job client's own).
		"mapreduce.application.classpath=" + cp,
		"yarn.app.mapreduce.am.resource.mb=" + strconv.Itoa(job.AMContainerMB),
		"yarn.app.mapreduce.am.command-opts=-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 " + opens,
		"mapreduce.map.memory.mb=" + strconv.Itoa(job.ContainerMB),
		fmt.Sprintf("mapreduce.map.java.opts=-Xms%[1]dm -Xmx%[1]dm -XX:+AlwaysPreTouch -XX:+UseSerialGC -XX:TieredStopAtLevel=1 %s", job.HeapMB, opens),
		"mapreduce.map.maxattempts=" + strconv.Itoa(job.MaxAttempts),
		// The engine's own record of the job, as JSON lines (jhist).
		"mapreduce.jobhistory.jhist.format=json",
		"mapreduce.jobhistory.intermediate-done-dir=" + filepath.Join(staging, "history", "done_intermediate"),
		"mapreduce.jobhistory.done-dir=" + filepath.Join(staging, "history", "done"),
		"mapreduce.job.reduces=0",
	}
	sets = append(sets, job.ExtraJobSettings...)
	args := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-Dlog4j.configuration=log4j.properties"}, JVMOpens...)
	args = append(args, "-cp", cp, "org.apache.hadoop.mapreduce.SleepJob")
	for _, kv := range sets {
		args = append(args, "-D", kv)
	}
	args = append(args, "-m", strconv.Itoa(job.Maps), "-r", "0", "-mt", strconv.Itoa(job.MapMillis))
	log := filepath.Join(p.opts.Dir, "mr-"+job.Name+".log")
	var env []string
	if job.User != "" {
		// The job's user (else the OS user); the staging directory must
		// be the job's user's.
		env = append(env, "HADOOP_USER_NAME="+job.User)
	}
	c, err := startClient("MapReduce job client", p.opts.Dir, log, env, args, p.opts.OffNode)
	if err != nil {
		return nil, err
	}
	return &MRJob{c}, nil
}

// MRResult is what the engine itself says of a finished job: the job
// client's final line and MapReduce's job counters as it printed them.
type MRResult struct {
	JobID     string
	Succeeded bool
	Counters  map[string]int64
}

var (
	mrJobID   = regexp.MustCompile(`Running job: (job_\d+_\d+)`)
	mrCounter = regexp.MustCompile(`(?m)^\s+([A-Za-z][A-Za-z0-9 ()/_.-]*[A-Za-z0-9)])=(\d+)\s*$`)
)

// Wait waits until the job client ends (or ctx is done) and returns the job's
// result.
func (j *MRJob) Wait(ctx context.Context) (MRResult, error) {
	select {
	case <-j.done:
	case <-ctx.Done():
		return MRResult{}, fmt.Errorf("the MapReduce job did not end: %w (client log tail: %s)", ctx.Err(), tail(j.Output(), 20))
	}
	out := j.Output()
	res := MRResult{Counters: map[string]int64{}}
	if m := mrJobID.FindStringSubmatch(out); m != nil {
		res.JobID = m[1]
	}
	res.Succeeded = res.JobID != "" && strings.Contains(out, "Job "+res.JobID+" completed successfully")
	for _, m := range mrCounter.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseInt(m[2], 10, 64)
		res.Counters[m[1]] = v
	}
	if res.JobID == "" {
		return res, fmt.Errorf("the MapReduce job client ran no job (exit %v): %s", j.err, tail(out, 30))
	}
	return res, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

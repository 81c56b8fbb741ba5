package yarnpeer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SparkLib is the Spark engine's directory for a Hadoop version: Spark on
// YARN with its own Hadoop client, and the tests' job (spark-job.jar),
// built by test/yarn/build.sh from test/yarn/spark/pom.xml.
func SparkLib(top, version string) string {
	return filepath.Join(BuildDir(top, version), "spark-lib")
}

// SparkJobClass is the tests' Spark job (test/yarn/spark): Partitions
// tasks, each holding HoldMB of heap in its executor and sleeping.
const SparkJobClass = "io.koordletyarn.sparkjob.HoldAndSleep"

// SparkDayWorkClass is make measure-jobs' Spark job (test/yarn/spark,
// SparkJob.Mode): tasks that burn a core, hold memory and sleep, or grow.
const SparkDayWorkClass = "io.koordletyarn.sparkjob.DayWork"

// The modes of SparkDayWorkClass.
const (
	// SparkBurn: each task spins on its core for Seconds, holding HoldMB.
	SparkBurn = "burn"
	// SparkHold: each task holds HoldMB and sleeps Seconds.
	SparkHold = "hold"
	// SparkGrow: each task grows to HoldMB evenly over Seconds.
	SparkGrow = "grow"
)

// SparkJVMOpens are the module options Spark 4 gives its own JVMs on Java
// 17 (launcher's JavaModuleOptions), for the submitting JVM; Spark's YARN
// client adds them to the driver's and the executors' commands itself.
var SparkJVMOpens = []string{
	"-XX:+IgnoreUnrecognizedVMOptions",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
	"--add-opens=java.base/sun.security.action=ALL-UNNAMED",
	"--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
	"-Djdk.reflect.useDirectMethodHandle=false",
	"-Dio.netty.tryReflectionSetAccessible=true",
}

// SparkJob is a run of the tests' Spark job (HoldAndSleep) in cluster
// mode: the driver in the YARN ApplicationMaster's container, Executors
// executors of one core, each in a container of ExecutorMB heap plus
// OverheadMB; Partitions tasks, each holding HoldMB of heap in its
// executor (until the executor's next task) and sleeping Seconds.
type SparkJob struct {
	Name        string
	User, Queue string // Queue "": default
	Partitions  int
	HoldMB      int
	Seconds     int
	Executors   int
	ExecutorMB  int // spark.executor.memory (0: 768)
	DriverMB    int // spark.driver.memory, the AM's heap (0: 512)
	OverheadMB  int // spark.{driver,executor}.memoryOverhead (0: 256; Spark's default is 384)
	// MaxExecutorFailures is spark.executor.maxNumFailures (0: Spark's
	// default, max(2 × executors, 3)).
	MaxExecutorFailures int
	Extra               []string // more --conf k=v
	// Mode, when set, runs SparkDayWorkClass in that mode (SparkBurn,
	// SparkHold, SparkGrow) instead of SparkJobClass.
	Mode string
}

// SparkRun is a spark-submit client running a SparkJob.
type SparkRun struct {
	*client
	p        *Peer
	EventDir string
}

// RunSparkJob submits job with Spark's own SparkSubmit (in a client JVM
// on the Spark class path and the cluster's client configuration) in
// cluster deploy mode, and waits for its end in the background (Spark's
// spark.yarn.submit.waitAppCompletion); it returns at once. The driver
// writes Spark's event log, uncompressed, into the run's EventDir.
func (p *Peer) RunSparkJob(job SparkJob) (*SparkRun, error) {
	if job.ExecutorMB == 0 {
		job.ExecutorMB = 768
	}
	if job.DriverMB == 0 {
		job.DriverMB = 512
	}
	if job.OverheadMB == 0 {
		job.OverheadMB = 256
	}
	if job.Queue == "" {
		job.Queue = "default"
	}
	lib := SparkLib(p.opts.Top, p.opts.Hadoop)
	confDir := filepath.Join(p.opts.Dir, "conf")
	run := filepath.Join(p.opts.Dir, "spark-"+job.Name)
	events := filepath.Join(run, "events")
	for _, d := range []string{events, filepath.Join(run, "staging")} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return nil, err
		}
		// The driver writes as the containers' user.
		if err := os.Chmod(d, 0o777); err != nil {
			return nil, err
		}
	}
	jvmOpts := "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
	sets := []string{
		"spark.app.name=" + job.Name,
		"spark.yarn.queue=" + job.Queue,
		// The engine's jars where they are (the NodeManager shares this
		// filesystem): nothing is localized but the job's configuration.
		"spark.yarn.jars=local:" + filepath.Join(lib, "*"),
		"spark.yarn.stagingDir=file://" + filepath.Join(run, "staging"),
		"spark.yarn.maxAppAttempts=1",
		"spark.yarn.submit.waitAppCompletion=true",
		"spark.yarn.report.interval=1s",
		"spark.driver.memory=" + strconv.Itoa(job.DriverMB) + "m",
		"spark.driver.memoryOverhead=" + strconv.Itoa(job.OverheadMB) + "m",
		"spark.driver.cores=1",
		"spark.driver.extraJavaOptions=" + jvmOpts,
		"spark.executor.instances=" + strconv.Itoa(job.Executors),
		"spark.executor.cores=1",
		"spark.executor.memory=" + strconv.Itoa(job.ExecutorMB) + "m",
		"spark.executor.memoryOverhead=" + strconv.Itoa(job.OverheadMB) + "m",
		"spark.executor.extraJavaOptions=" + jvmOpts,
		"spark.dynamicAllocation.enabled=false",
		"spark.ui.enabled=false",
		// The engine's own record of the job, as JSON lines.
		"spark.eventLog.enabled=true",
		"spark.eventLog.dir=file://" + events,
		"spark.eventLog.compress=false",
		"spark.eventLog.rolling.enabled=false",
	}
	if job.MaxExecutorFailures > 0 {
		sets = append(sets, "spark.executor.maxNumFailures="+strconv.Itoa(job.MaxExecutorFailures))
	}
	sets = append(sets, job.Extra...)
	args := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, SparkJVMOpens...)
	class, jobArgs := SparkJobClass, []string{}
	switch job.Mode {
	case "":
	case SparkBurn, SparkHold, SparkGrow:
		class, jobArgs = SparkDayWorkClass, []string{job.Mode}
	default:
		return nil, fmt.Errorf("spark job %s: mode %q is none of %s, %s, %s", job.Name, job.Mode, SparkBurn, SparkHold, SparkGrow)
	}
	args = append(args, "-cp", confDir+":"+filepath.Join(lib, "*"), "org.apache.spark.deploy.SparkSubmit",
		"--master", "yarn", "--deploy-mode", "cluster", "--class", class)
	for _, kv := range sets {
		args = append(args, "--conf", kv)
	}
	args = append(args, "local:"+filepath.Join(lib, "spark-job.jar"))
	args = append(args, jobArgs...)
	args = append(args, strconv.Itoa(job.Partitions), strconv.Itoa(job.HoldMB), strconv.Itoa(job.Seconds))
	log := filepath.Join(run, "submit.log")
	env := []string{"HADOOP_CONF_DIR=" + confDir, "YARN_CONF_DIR=" + confDir}
	if job.User != "" {
		env = append(env, "HADOOP_USER_NAME="+job.User)
	}
	c, err := startClient("spark-submit client", run, log, env, args, p.opts.OffNode)
	if err != nil {
		return nil, err
	}
	return &SparkRun{client: c, p: p, EventDir: events}, nil
}

var sparkAppID = regexp.MustCompile(`Submitted application (application_\d+_\d+)`)

// AppID is the YARN application id once the client has submitted it.
func (r *SparkRun) AppID() string {
	if m := sparkAppID.FindStringSubmatch(r.Output()); m != nil {
		return m[1]
	}
	return ""
}

// SparkResult is a finished Spark application as the ResourceManager and
// the engine itself report it.
type SparkResult struct {
	AppID string
	// State and FinalStatus are the RM's report (e.g. FINISHED
	// SUCCEEDED).
	State, FinalStatus string
	// ClientExit is the spark-submit client's exit error (nil: 0).
	ClientExit error
	// Elapsed is the client's time, submission to the application's end.
	Elapsed time.Duration
	// EventLog is Spark's event log file, Events what it says.
	EventLog string
	Events   *SparkEvents
}

// Wait waits for the client to end (it waits for the application) and
// returns the RM's report and the parsed event log.
func (r *SparkRun) Wait(ctx context.Context) (SparkResult, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return SparkResult{}, fmt.Errorf("the Spark application did not end: %w (client log tail: %s)", ctx.Err(), tail(r.Output(), 20))
	}
	res := SparkResult{AppID: r.AppID(), ClientExit: r.err, Elapsed: r.Ended.Sub(r.Started)}
	if res.AppID == "" {
		return res, fmt.Errorf("spark-submit submitted no application (exit %v): %s", r.err, tail(r.Output(), 30))
	}
	st, err := r.p.Do(ctx, "app "+res.AppID)
	if err != nil {
		return res, err
	}
	if f := strings.Fields(st); len(f) >= 2 {
		res.State, res.FinalStatus = f[0], f[1]
	}
	// One log an attempt (APPID_1, APPID_2, … when the RM ran the AM
	// again): the last attempt's says how the application ended.
	logs, _ := filepath.Glob(filepath.Join(r.EventDir, res.AppID+"*"))
	if len(logs) == 0 {
		return res, fmt.Errorf("Spark's event log for %s: no file in %s", res.AppID, r.EventDir)
	}
	sort.Strings(logs)
	res.EventLog = logs[len(logs)-1]
	f, err := os.Open(res.EventLog)
	if err != nil {
		return res, err
	}
	defer f.Close()
	res.Events, err = ParseSparkEvents(f)
	return res, err
}

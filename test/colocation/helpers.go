package colocation

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The harness runs the LS service and the load generator as processes of
// its own binary (re-executed), so that each can be put in its cgroups
// before it starts: helperEnv selects the role, the other variables its
// parameters.
const (
	helperEnv   = "KOORDLET_YARN_COLOCATION_HELPER"
	passesEnv   = "KOORDLET_YARN_COLOCATION_PASSES"
	memEnv      = "KOORDLET_YARN_COLOCATION_MEM_MIB"
	urlEnv      = "KOORDLET_YARN_COLOCATION_URL"
	rateEnv     = "KOORDLET_YARN_COLOCATION_RATE"
	durationEnv = "KOORDLET_YARN_COLOCATION_DURATION"
	timeoutEnv  = "KOORDLET_YARN_COLOCATION_TIMEOUT"
)

// RunHelperIfRequested turns this process into the LS service or the load
// generator when the harness started it so; call it first in main (and in
// TestMain). Both wait for a line on stdin (the harness has moved them into
// their cgroups) before they allocate or start a thread of work.
func RunHelperIfRequested() {
	role := os.Getenv(helperEnv)
	if role == "" {
		return
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "colocation helper: no start line:", err)
		os.Exit(2)
	}
	var err error
	switch role {
	case "serve":
		err = serve()
	case "attack":
		err = attack()
	case "hold":
		err = hold()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "colocation helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func envInt(name string) (int, error) {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// serve is the LS service: it touches its memory, listens on a loopback
// port, prints "listening <addr>" and serves until killed; every request
// does the same fixed work, its time from the front observed in the
// service's latency histogram, served on ServiceMetricsPath.
func serve() error {
	passes, err := envInt(passesEnv)
	if err != nil {
		return err
	}
	mib, err := envInt(memEnv)
	if err != nil {
		return err
	}
	w := newWork(mib)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	srv := &http.Server{Handler: serviceMux(w, passes), ReadHeaderTimeout: 5 * time.Second}
	return srv.Serve(ln)
}

// serviceMux is the LS service's handler: every request on ServiceHandler
// does passes of w's work, its time from the front (RequestStartHeader,
// else the handler's start) observed in the service's own latency
// histogram; ServiceMetricsPath serves the histogram, as a user's service
// does on its own port (the SLO its pod declares names it).
func serviceMux(w *work, passes int) *http.ServeMux {
	reg := prometheus.NewRegistry()
	latency := NewLatencyHistogram()
	reg.MustRegister(latency)
	handle := latency.WithLabelValues(ServiceHandler)
	mux := http.NewServeMux()
	mux.HandleFunc(ServiceHandler, func(rw http.ResponseWriter, r *http.Request) {
		began := time.Now()
		fmt.Fprintf(rw, "%x\n", w.do(passes))
		handle.Observe(servedLatency(r.Header.Get(RequestStartHeader), began, time.Now()).Seconds())
	})
	mux.Handle(ServiceMetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

// hold touches its memory, prints "holding", and holds it until killed
// (the LS pod's memory beside the service: make measure-jobs' day).
func hold() error {
	mib, err := envInt(memEnv)
	if err != nil {
		return err
	}
	held := make([][]byte, mib)
	for i := range held {
		held[i] = make([]byte, 1<<20)
		for j := 0; j < len(held[i]); j += 4096 {
			held[i][j] = 1
		}
	}
	fmt.Println("holding")
	select {}
}

// attack is the load generator: vegeta, open loop at a constant rate, for
// the duration, each request stamped as a front stamps it (frontTargeter).
// It prints "began <unix ns>", then one line per request: "<seq> <sent
// unix ns> <latency ns> <status code> <error 0|1>".
func attack() error {
	rate, err := envInt(rateEnv)
	if err != nil {
		return err
	}
	dur, err := time.ParseDuration(os.Getenv(durationEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", durationEnv, err)
	}
	timeout, err := time.ParseDuration(os.Getenv(timeoutEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", timeoutEnv, err)
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	defer out.Flush()
	atk := vegeta.NewAttacker(vegeta.Timeout(timeout), vegeta.KeepAlive(true), vegeta.Workers(32))
	tr := frontTargeter(os.Getenv(urlEnv))
	began := time.Now()
	fmt.Fprintf(out, "began %d\n", began.UnixNano())
	if err := out.Flush(); err != nil {
		return err
	}
	for res := range atk.Attack(tr, vegeta.ConstantPacer{Freq: rate, Per: time.Second}, dur, "ls") {
		failed := 0
		if res.Error != "" || res.Code != http.StatusOK {
			failed = 1
		}
		fmt.Fprintf(out, "%d %d %d %d %d\n", res.Seq, res.Timestamp.UnixNano(), int64(res.Latency), res.Code, failed)
	}
	return nil
}

// frontTargeter gives vegeta a GET of url stamped with RequestStartHeader
// at the time vegeta takes it, which is the time vegeta's own latency
// starts from (Attacker.hit stamps the result, then asks the targeter).
func frontTargeter(url string) vegeta.Targeter {
	return func(tgt *vegeta.Target) error {
		if tgt == nil {
			return vegeta.ErrNilTarget
		}
		*tgt = vegeta.Target{Method: http.MethodGet, URL: url,
			Header: http.Header{RequestStartHeader: {FrontStamp(time.Now())}}}
		return nil
	}
}

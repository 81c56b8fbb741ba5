/*
Copyright 2022 The Koordinator Authors.
Copyright 2026 The koordlet-yarn Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.

Derived from Koordinator v1.8.0 cmd/koordlet/main.go (main and its HTTP server);
modified for koordlet-yarn.
*/

// Command koordlet is the Koordinator node agent with the koordlet-yarn
// plugin set installed: YARN containers become first-class best-effort
// entities in koordlet's own loops and configuration.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/koordinator-sh/koordinator/cmd/koordlet/options"
	"github.com/koordinator-sh/koordinator/pkg/features"
	agent "github.com/koordinator-sh/koordinator/pkg/koordlet"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/audit"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/config"
	"github.com/koordinator-sh/koordinator/pkg/koordlet/metrics"
	metricsutil "github.com/koordinator-sh/koordinator/pkg/util/metrics"

	koordletyarn "github.com/koordlet-yarn/koordlet-yarn"
	yarnfeatures "github.com/koordlet-yarn/koordlet-yarn/framework/features"
	"github.com/koordlet-yarn/koordlet-yarn/framework/version"
)

func main() {
	// The plugin set registers its gates, flags and plugins first, so that
	// --feature-gates and --help know them.
	yarn, err := koordletyarn.Install(flag.CommandLine)
	if err != nil {
		fmt.Fprintf(os.Stderr, "koordlet: install the YARN plugin set: %v\n", err)
		os.Exit(1)
	}
	cfg := config.NewConfiguration()
	cfg.InitFlags(flag.CommandLine)
	klog.InitFlags(nil)
	flag.Parse()

	if yarn.VersionRequested() {
		fmt.Println(version.Get())
		os.Exit(0)
	}
	if yarn.PolicyCheckRequested() {
		os.Exit(yarn.RunPolicyCheck(os.Stdout))
	}
	if err := yarn.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "koordlet: invalid flag: %v\n", err)
		os.Exit(2)
	}
	// koordlet-yarn's acting gates are on only when named: AllAlpha=true
	// (a customised release trying Koordinator's alpha features) leaves them off.
	held, err := yarnfeatures.Apply(cfg.FeatureGates)
	if err != nil {
		fmt.Fprintf(os.Stderr, "koordlet: invalid --feature-gates: %v\n", err)
		os.Exit(2)
	}
	if len(held) > 0 {
		klog.Warningf("koordlet-yarn: AllAlpha/AllBeta does not turn on the YARN gates that act; name each in --feature-gates to turn it on; held off: %v", held)
	}

	if yarn.PreflightRequested() {
		os.Exit(yarn.RunPreflight(os.Stdout, sync.OnceValues(func() (*rest.Config, error) {
			if err := cfg.InitKubeConfigForKoordlet(*options.KubeAPIQPS, *options.KubeAPIBurst); err != nil {
				return nil, err
			}
			return cfg.KubeRestConf, nil
		})))
	}

	go wait.Forever(klog.Flush, 5*time.Second)
	defer klog.Flush()

	if *options.EnablePprof {
		go func() {
			if err := http.ListenAndServe(*options.PprofAddr, nil); err != nil {
				klog.Errorf("pprof server on %v stopped: %v", *options.PprofAddr, err)
			}
		}()
	}

	stopCtx := signals.SetupSignalHandler()
	if features.DefaultKoordletFeatureGate.Enabled(features.AuditEvents) {
		audit.SetupDefaultAuditor(cfg.AuditConf, stopCtx.Done())
	}

	klog.Info("Setting up kubeconfig for koordlet")
	if err := cfg.InitKubeConfigForKoordlet(*options.KubeAPIQPS, *options.KubeAPIBurst); err != nil {
		klog.Fatalf("Unable to setup kubeconfig: %v", err)
	}
	daemon, err := agent.NewDaemon(cfg)
	if err != nil {
		klog.Fatalf("Unable to setup koordlet daemon: %v", err)
	}

	go serveHTTP()

	klog.Info("Starting the koordlet daemon with the YARN plugin set")
	daemon.Run(stopCtx.Done())
	// koordlet's daemon returns on SIGTERM without waiting for its
	// strategies: let a YARN container kill in flight end first.
	yarn.Shutdown(yarn.ShutdownTimeout())
}

// serveHTTP serves koordlet's metrics and the extended handlers (among them
// the YARN debug endpoint) on --addr.
func serveHTTP() {
	klog.Infof("Starting koordlet HTTP server on %v", *options.ServerAddr)
	mux := http.NewServeMux()
	mux.Handle(metrics.ExternalHTTPPath, promhttp.HandlerFor(metrics.ExternalRegistry, promhttp.HandlerOpts{}))
	mux.Handle(metrics.InternalHTTPPath, promhttp.HandlerFor(metrics.InternalRegistry, promhttp.HandlerOpts{}))
	mux.Handle(metrics.DefaultHTTPPath, promhttp.HandlerFor(
		metricsutil.MergedGatherFunc(metrics.InternalRegistry, metrics.ExternalRegistry), promhttp.HandlerOpts{}))
	if features.DefaultKoordletFeatureGate.Enabled(features.AuditEventsHTTPHandler) {
		mux.HandleFunc("/events", audit.HttpHandler())
	}
	options.InstallExtendedHTTPHandler(mux)
	// Bound here and the bound address logged, so that --addr with port 0
	// gets a free port from the kernel without a race (the tests' boxes
	// read it from this line).
	l, err := net.Listen("tcp", *options.ServerAddr)
	if err != nil {
		klog.Fatalf("koordlet HTTP server: %v", err)
	}
	klog.Infof("%s%s", ListeningPrefix, l.Addr())
	klog.Fatalf("koordlet HTTP server stopped: %v", http.Serve(l, mux))
}

// ListeningPrefix starts the log line naming the address koordlet's HTTP
// server is bound to.
const ListeningPrefix = "koordlet HTTP server listening on "

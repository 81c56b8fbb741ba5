package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"
)

// serve is the LS pod's service: an HTTP server that answers every
// request, holding hold-mib of touched memory (a service's heap).
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", ":8080", "address to serve on")
	hold := fs.Int("hold-mib", 0, "MiB of memory to allocate and touch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	heap := make([]byte, *hold<<20)
	for i := 0; i < len(heap); i += 4096 {
		heap[i] = 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ok %d\n", len(heap))
	})}
	go func() { _ = srv.Serve(ln) }()
	<-terminated()
	return srv.Close()
}

// SPDX-License-Identifier: Apache-2.0
// Writes a real Go CPU profile (runtime/pprof, standard library only) of a short busy loop,
// for the collector's ingest test: gocpuprofile OUT [SECONDS]. With TRACE_ID SPAN_A SPAN_B, each
// half runs in its own span (pprof.Do labels trace_id, span_id, span_name), for the trace-link
// test: gocpuprofile OUT SECONDS TRACE_ID SPAN_A SPAN_B.
package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

func hashLoop(deadline time.Time) int {
	sum := [32]byte{}
	n := 0
	for time.Now().Before(deadline) {
		for i := 0; i < 1000; i++ {
			sum = sha256.Sum256(sum[:])
		}
		n++
	}
	return n + int(sum[0])
}

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func fibLoop(deadline time.Time) int {
	total := 0
	for time.Now().Before(deadline) {
		total += fib(22)
	}
	return total
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gocpuprofile OUT [SECONDS [TRACE_ID SPAN_A SPAN_B]]")
		os.Exit(2)
	}
	seconds := 1.0
	if len(os.Args) > 2 {
		if s, err := strconv.ParseFloat(os.Args[2], 64); err == nil {
			seconds = s
		}
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	half := time.Duration(seconds * float64(time.Second) / 2)
	r := 0
	if len(os.Args) > 5 { // each half in its own span, labelled as Go services do
		ctx := context.Background()
		pprof.Do(ctx, pprof.Labels("trace_id", os.Args[3], "span_id", os.Args[4],
			"span_name", "GET /hash"), func(context.Context) {
			r += hashLoop(time.Now().Add(half))
		})
		pprof.Do(ctx, pprof.Labels("trace_id", os.Args[3], "span_id", os.Args[5],
			"span_name", "GET /fib"), func(context.Context) {
			r += fibLoop(time.Now().Add(half))
		})
	} else {
		r = hashLoop(time.Now().Add(half)) + fibLoop(time.Now().Add(half))
	}
	pprof.StopCPUProfile()
	f.Close()
	fmt.Println(r)
}

// SPDX-License-Identifier: Apache-2.0
// A Go hot path whose leaf has no frame (standard library only), for the pcsp unwinder tests:
// goleaf SECONDS spins in main.mixLeaf, a leaf with no locals, so Go gives it no frame and
// leaves rbp alone; its only caller is main.ledgerPass, called by main.main. Walked by frame
// pointers, a sample in the leaf reads ledgerPass's frame and loses ledgerPass itself. Prints
// "ready" once running. Built with cgo, its C code has .eh_frame and its Go code none.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

// mixLeaf calls nothing and keeps everything in registers: frameless.
//
//go:noinline
func mixLeaf(v uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		v ^= v >> 7
		v *= 0x9e3779b97f4a7c15
		v ^= v >> 11
	}
	return v
}

// ledgerPass has a frame (the ledger array) and so saves rbp.
//
//go:noinline
func ledgerPass(deadline time.Time) {
	var ledger [8]uint64
	for time.Now().Before(deadline) {
		ledger[sink&7] += mixLeaf(sink+ledger[1], 200000)
		sink += ledger[sink&7]
	}
}

func main() {
	seconds := 5.0
	if len(os.Args) > 1 {
		if s, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = s
		}
	}
	fmt.Println("ready", cgoMark())
	ledgerPass(time.Now().Add(time.Duration(seconds * float64(time.Second))))
	fmt.Println(sink)
}

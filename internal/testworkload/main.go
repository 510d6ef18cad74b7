// Command testworkload is the workload the worker's driver tests run in
// every runtime: a static binary in an image built FROM scratch (docker,
// compose) and a GOOS=wasip1 module (wasm). It prints its environment,
// then runs until stopped, or exits as told. It is configured through its
// environment alone, since a wasm module gets no arguments:
//
//	WORKLOAD_STDERR     a line to write to stderr at start
//	WORKLOAD_EXIT       exit with this code after WORKLOAD_AFTER
//	WORKLOAD_AFTER      a Go duration (default 0s) before exiting
//	WORKLOAD_ALLOC_MIB  allocate and touch this much memory first
//
// Each variable is printed as one line "env <Go-quoted NAME=value>", so
// that values with newlines stay one line.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"
)

func main() {
	env := os.Environ()
	sort.Strings(env)
	for _, kv := range env {
		fmt.Printf("env %q\n", kv)
	}
	if msg := os.Getenv("WORKLOAD_STDERR"); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
	}
	if mib, err := strconv.Atoi(os.Getenv("WORKLOAD_ALLOC_MIB")); err == nil && mib > 0 {
		hold := allocate(mib)
		fmt.Printf("allocated %d MiB\n", len(hold))
	}
	stop := stopSignal()
	code, err := strconv.Atoi(os.Getenv("WORKLOAD_EXIT"))
	if err != nil {
		fmt.Println("running")
		for {
			select {
			case <-stop:
				fmt.Println("stopping")
				os.Exit(0)
			case <-time.After(time.Second):
			}
		}
	}
	after, _ := time.ParseDuration(os.Getenv("WORKLOAD_AFTER"))
	select {
	case <-stop:
	case <-time.After(after):
	}
	fmt.Fprintf(os.Stderr, "exiting with code %d\n", code)
	os.Exit(code)
}

// allocate holds mib MiB, each page written so that it is really used.
func allocate(mib int) [][]byte {
	hold := make([][]byte, 0, mib)
	for range mib {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		hold = append(hold, b)
	}
	return hold
}

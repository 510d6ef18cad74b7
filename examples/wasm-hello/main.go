// Command wasm-hello is a wasm template's module: built with GOOS=wasip1
// GOARCH=wasm into main.wasm at the template's root (make), it runs inside
// the worker (wazero). It greets with its launch's parameters and identity,
// then beats every few seconds until the worker stops it.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	fmt.Printf("hello from %s (job %s of bundle %s), %s at epoch %s\n", os.Getenv("AMSERVER_NODE"),
		os.Getenv("AMSERVER_JOB"), os.Getenv("AMSERVER_BUNDLE"), os.Getenv("AMSERVER_ROLE"), os.Getenv("AMSERVER_EPOCH"))
	if g := os.Getenv("GREETING"); g != "" {
		fmt.Println("the launch says:", g)
	}
	for i := 1; ; i++ {
		time.Sleep(5 * time.Second)
		fmt.Println("beat", i)
	}
}

// racy is a tiny program with one data race, for racereport's tests: two
// goroutines write one map's annotation, as setKCPOriginalAPIVersionAnnotation
// does on a shared object.
package main

import (
	"fmt"
	"sync"
)

type object struct{ annotations map[string]string }

//go:noinline
func setAnnotation(o *object, v string) { o.annotations["kcp.io/original-api-version"] = v }

//go:noinline
func readAnnotation(o *object) string { return o.annotations["kcp.io/original-api-version"] }

func main() {
	o := &object{annotations: map[string]string{}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); setAnnotation(o, "v1") }()
	go func() { defer wg.Done(); fmt.Println(readAnnotation(o)) }()
	wg.Wait()
	var counter int
	wg.Add(2)
	for range 2 {
		go func() { defer wg.Done(); counter++ }()
	}
	wg.Wait()
	fmt.Println(counter)
}

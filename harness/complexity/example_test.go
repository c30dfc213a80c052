package complexity_test

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
)

// A fit reads a cost series measured at several sizes (here three
// repetitions of a cost that grows as n^2, as the /proc/sysvipc walk of
// Linux 5.14 did): the exponent, its 95% interval and the class it
// holds.
func ExampleFitSeries() {
	sizes := []int{1024, 2048, 4096, 8192, 16384, 32768}
	var samples [][]float64
	for _, n := range sizes {
		c := float64(n) * float64(n) / 2
		samples = append(samples, []float64{c * 0.98, c, c * 1.02})
	}
	f := complexity.FitSeries(sizes, samples)
	fmt.Printf("n^%.2f %s\n", f.Exponent, f.Class)
	// Output:
	// n^2.00 O(n^2)
}

package runner

import "testing"

// A bucket's middle is within 1/64 of every value in it, and buckets are
// in the order of their values.
func TestDurationBuckets(t *testing.T) {
	last := -1
	for v := int64(0); v < 1<<22; v += 1 + v/97 {
		b := bucketOf(v)
		if b < last {
			t.Fatalf("bucket of %d is %d, before %d", v, b, last)
		}
		last = b
		m := bucketMiddle(b)
		if diff := m - v; diff*64 > v || -diff*64 > v {
			t.Fatalf("%d is in bucket %d, whose middle %d is more than 1/64 away", v, b, m)
		}
	}
}

func TestDurationMedian(t *testing.T) {
	var d durations
	if d.median() != 0 {
		t.Fatal("the median of nothing is 0")
	}
	for _, v := range []int64{5, 1000, 7, 100000, 6} {
		d.add(v)
	}
	if got := d.median(); got != 7 {
		t.Fatalf("median %d, want 7", got)
	}
}

package optimized

import (
	"math/bits"

	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
)

const (
	mapShift = 6
	mapSize  = 1 << mapShift // RADIX_TREE_MAP_SIZE
)

// node is one level of the radix tree. Leaves (shift 0) hold objects; inner
// nodes hold children. full has bit i set when slot i has no free idx left
// below it (the complement of the idr's IDR_FREE tag); used has bit i set when
// slot i holds something.
type node struct {
	shift    int
	children [mapSize]*node
	objs     [mapSize]*ipcns.Obj
	full     uint64
	used     uint64
}

// IDR is a 64-way radix tree like the kernel's idr, with the key table
// (a hash map, like the rhashtable since 4.14) and a cached max_idx.
type IDR struct {
	root   *node // covers [0, capacity)
	n      int
	maxIdx int
	keys   map[int32]*ipcns.Obj
	visits int64
	// spare holds nodes the tree let go of, for the next that it needs
	// (the kernel's radix_tree_preload keeps nodes at hand the same way).
	spare []*node
}

// newNode returns an empty node at shift, a spare one if there is one.
func (t *IDR) newNode(shift int) *node {
	if k := len(t.spare); k > 0 {
		n := t.spare[k-1]
		t.spare = t.spare[:k-1]
		*n = node{shift: shift}
		return n
	}
	return &node{shift: shift}
}

// drop keeps a node the tree no longer uses, up to a few.
func (t *IDR) drop(n *node) {
	if len(t.spare) < 8 {
		t.spare = append(t.spare, n)
	}
}

// NewIDR returns an empty tree.
func NewIDR() *IDR { return &IDR{maxIdx: -1, keys: map[int32]*ipcns.Obj{}} }

func (t *IDR) capacity() int {
	if t.root == nil {
		return 0
	}
	return mapSize << t.root.shift
}

// Height returns the number of tree levels (0 for an empty tree).
func (t *IDR) Height() int {
	if t.root == nil {
		return 0
	}
	return t.root.shift/mapShift + 1
}

// Get implements ipcns.Table.
func (t *IDR) Get(idx int) *ipcns.Obj {
	if idx < 0 || idx >= t.capacity() {
		return nil
	}
	n := t.root
	for n.shift > 0 {
		t.visits++
		n = n.children[(idx>>n.shift)&(mapSize-1)]
		if n == nil {
			return nil
		}
	}
	t.visits++
	return n.objs[idx&(mapSize-1)]
}

// FindFree implements ipcns.Table: the lowest free idx in [from, to).
func (t *IDR) FindFree(from, to int) int {
	if from >= to {
		return -1
	}
	idx := from
	if from < t.capacity() {
		idx = t.findFree(t.root, 0, from)
	}
	if idx < 0 {
		idx = max(from, t.capacity()) // everything in the tree is full
	}
	if idx >= to {
		return -1
	}
	return idx
}

// findFree returns the lowest free idx >= from under n (which covers
// [base, base + 64<<shift)), or -1.
func (t *IDR) findFree(n *node, base, from int) int {
	t.visits++
	span := 1 << n.shift
	start := 0
	if from > base {
		start = (from - base) >> n.shift
	}
	for i := start; i < mapSize; i++ {
		// Skip full slots quickly with the bitmap.
		free := ^n.full &^ (1<<uint(i) - 1)
		if free == 0 {
			return -1
		}
		i = bits.TrailingZeros64(free)
		childBase := base + i*span
		if n.shift == 0 || n.children[i] == nil {
			return max(childBase, from)
		}
		lo := childBase
		if from > lo {
			lo = from
		}
		if idx := t.findFree(n.children[i], childBase, lo); idx >= 0 {
			return idx
		}
	}
	return -1
}

// Insert implements ipcns.Table.
func (t *IDR) Insert(o *ipcns.Obj) {
	if t.root == nil {
		t.root = t.newNode(0)
	}
	for o.Idx >= t.capacity() {
		old := t.root
		t.root = t.newNode(old.shift + mapShift)
		t.root.children[0] = old
		t.root.used = 1
		if old.full == ^uint64(0) {
			t.root.full = 1
		}
	}
	t.insert(t.root, o)
	t.n++
	if o.Idx > t.maxIdx {
		t.maxIdx = o.Idx
	}
	if o.Key != 0 {
		t.keys[o.Key] = o
	}
}

func (t *IDR) insert(n *node, o *ipcns.Obj) {
	t.visits++
	i := (o.Idx >> n.shift) & (mapSize - 1)
	if n.shift == 0 {
		n.objs[i] = o
		n.used |= 1 << uint(i)
		n.full |= 1 << uint(i)
		return
	}
	c := n.children[i]
	if c == nil {
		c = t.newNode(n.shift - mapShift)
		n.children[i] = c
		n.used |= 1 << uint(i)
	}
	t.insert(c, o)
	if c.full == ^uint64(0) {
		n.full |= 1 << uint(i)
	}
}

// Remove implements ipcns.Table. Removing the highest idx finds the new one
// by descending along the highest used slots (O(height)).
func (t *IDR) Remove(idx int) {
	o := t.Get(idx)
	if o == nil {
		return
	}
	t.remove(t.root, idx)
	t.n--
	if o.Key != 0 && t.keys[o.Key] == o {
		delete(t.keys, o.Key)
	}
	for t.root != nil && t.root.shift > 0 && t.root.used == 1 {
		old := t.root
		t.root = t.root.children[0] // shrink, like radix_tree_shrink
		t.drop(old)
	}
	if t.root != nil && t.root.used == 0 {
		t.drop(t.root)
		t.root = nil
	}
	if idx == t.maxIdx {
		t.maxIdx = t.last()
	}
}

func (t *IDR) remove(n *node, idx int) {
	t.visits++
	i := (idx >> n.shift) & (mapSize - 1)
	bit := uint64(1) << uint(i)
	n.full &^= bit
	if n.shift == 0 {
		n.objs[i] = nil
		n.used &^= bit
		return
	}
	c := n.children[i]
	t.remove(c, idx)
	if c.used == 0 {
		n.children[i] = nil
		n.used &^= bit
		t.drop(c)
	}
}

// last returns the highest occupied idx, or -1.
func (t *IDR) last() int {
	n := t.root
	if n == nil {
		return -1
	}
	base := 0
	for {
		t.visits++
		if n.used == 0 {
			return -1
		}
		i := 63 - bits.LeadingZeros64(n.used)
		base += i << n.shift
		if n.shift == 0 {
			return base
		}
		n = n.children[i]
	}
}

// next returns the object with the lowest idx >= from, or nil (idr_get_next).
func (t *IDR) next(from int) *ipcns.Obj {
	if t.root == nil || from >= t.capacity() {
		return nil
	}
	return t.nextUnder(t.root, 0, from)
}

func (t *IDR) nextUnder(n *node, base, from int) *ipcns.Obj {
	t.visits++
	span := 1 << n.shift
	start := 0
	if from > base {
		start = (from - base) >> n.shift
	}
	for used := n.used &^ (1<<uint(start) - 1); used != 0; used &= used - 1 {
		i := bits.TrailingZeros64(used)
		if n.shift == 0 {
			return n.objs[i]
		}
		if o := t.nextUnder(n.children[i], base+i*span, from); o != nil {
			return o
		}
	}
	return nil
}

// FindKey implements ipcns.Table.
func (t *IDR) FindKey(key int32) *ipcns.Obj {
	t.visits++
	return t.keys[key]
}

// MaxIdx implements ipcns.Table.
func (t *IDR) MaxIdx() int { return t.maxIdx }

// Len implements ipcns.Table.
func (t *IDR) Len() int { return t.n }

// Listing implements ipcns.Table the way sysvipc_find_ipc() does since 5.15
// and 6.1: stop once the position passes max_idx, find each record with
// idr_get_next.
func (t *IDR) Listing() []*ipcns.Obj {
	var out []*ipcns.Obj
	for pos := 0; pos <= t.maxIdx; {
		o := t.next(pos)
		if o == nil {
			break
		}
		out = append(out, o)
		pos = o.Idx + 1
	}
	return out
}

// CostCounter implements ipcns.Table.
func (t *IDR) CostCounter() string { return "nodes" }

// Counters implements ipcns.Table.
func (t *IDR) Counters() map[string]int64 {
	return map[string]int64{"nodes": t.visits}
}

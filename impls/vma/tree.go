package vma

import "fmt"

// treeLayout is the optimized Layout: an AVL tree keyed by VMA start, so
// that every lookup, insertion and removal visits O(log n) nodes. The key is
// read from the VMA itself, which may change in place as long as the order
// holds (VMAs never overlap).
type treeLayout struct {
	root *node
	n    int
	w    Walks
}

type node struct {
	v           *VMA
	left, right *node
	height      int
}

// NewTree returns an empty tree Layout.
func NewTree() Layout { return &treeLayout{} }

func height(n *node) int {
	if n == nil {
		return 0
	}
	return n.height
}

func (n *node) fix() { n.height = 1 + max(height(n.left), height(n.right)) }

func rotateRight(n *node) *node {
	l := n.left
	n.left, l.right = l.right, n
	n.fix()
	l.fix()
	return l
}

func rotateLeft(n *node) *node {
	r := n.right
	n.right, r.left = r.left, n
	n.fix()
	r.fix()
	return r
}

// balance restores the AVL invariant at n after one insertion or removal
// below it.
func balance(n *node) *node {
	n.fix()
	switch d := height(n.left) - height(n.right); {
	case d > 1:
		if height(n.left.left) < height(n.left.right) {
			n.left = rotateLeft(n.left)
		}
		return rotateRight(n)
	case d < -1:
		if height(n.right.right) < height(n.right.left) {
			n.right = rotateRight(n.right)
		}
		return rotateLeft(n)
	}
	return n
}

// Find implements Layout.
func (t *treeLayout) Find(addr int64) *VMA {
	t.w.Walks++
	var cand *VMA
	for n := t.root; n != nil; {
		t.w.Nodes++
		switch {
		case n.v.End <= addr:
			n = n.right
		case n.v.Start <= addr:
			return n.v
		default:
			cand, n = n.v, n.left
		}
	}
	return cand
}

// Before implements Layout.
func (t *treeLayout) Before(addr int64) *VMA {
	t.w.Walks++
	var cand *VMA
	for n := t.root; n != nil; {
		t.w.Nodes++
		if n.v.Start < addr {
			cand, n = n.v, n.right
		} else {
			n = n.left
		}
	}
	return cand
}

// Insert implements Layout.
func (t *treeLayout) Insert(v *VMA) {
	t.w.Walks++
	t.root = t.insert(t.root, v)
	t.n++
}

func (t *treeLayout) insert(n *node, v *VMA) *node {
	if n == nil {
		return &node{v: v, height: 1}
	}
	t.w.Nodes++
	switch {
	case v.Start < n.v.Start:
		n.left = t.insert(n.left, v)
	case v.Start > n.v.Start:
		n.right = t.insert(n.right, v)
	default:
		panic(fmt.Sprintf("vma: insert of a VMA at %d where one starts already", v.Start))
	}
	return balance(n)
}

// Remove implements Layout.
func (t *treeLayout) Remove(v *VMA) {
	t.w.Walks++
	t.root = t.remove(t.root, v)
	t.n--
}

func (t *treeLayout) remove(n *node, v *VMA) *node {
	if n == nil {
		panic(fmt.Sprintf("vma: VMA at %d is not in the layout", v.Start))
	}
	t.w.Nodes++
	switch {
	case v.Start < n.v.Start:
		n.left = t.remove(n.left, v)
	case v.Start > n.v.Start:
		n.right = t.remove(n.right, v)
	case n.v != v:
		panic(fmt.Sprintf("vma: another VMA starts at %d", v.Start))
	case n.left == nil:
		return n.right
	case n.right == nil:
		return n.left
	default:
		var min *node
		n.right, min = t.removeMin(n.right)
		min.left, min.right = n.left, n.right
		return balance(min)
	}
	return balance(n)
}

// removeMin takes the leftmost node out of the subtree n.
func (t *treeLayout) removeMin(n *node) (*node, *node) {
	t.w.Nodes++
	if n.left == nil {
		return n.right, n
	}
	var min *node
	n.left, min = t.removeMin(n.left)
	return balance(n), min
}

// Store implements Layout.
func (t *treeLayout) Store(v *VMA) {
	t.w.Walks++
	for n := t.root; n != nil; {
		t.w.Nodes++
		switch {
		case v.Start < n.v.Start:
			n = n.left
		case v.Start > n.v.Start:
			n = n.right
		case n.v == v:
			return
		default:
			panic(fmt.Sprintf("vma: another VMA starts at %d", v.Start))
		}
	}
	panic(fmt.Sprintf("vma: VMA at %d is not in the layout", v.Start))
}

// All implements Layout.
func (t *treeLayout) All() []*VMA {
	out := make([]*VMA, 0, t.n)
	var walk func(*node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		walk(n.left)
		out = append(out, n.v)
		walk(n.right)
	}
	walk(t.root)
	return out
}

// Len implements Layout.
func (t *treeLayout) Len() int { return t.n }

// Counts implements Layout.
func (t *treeLayout) Counts() Walks { return t.w }

// Clear implements Layout.
func (t *treeLayout) Clear() { t.root, t.n, t.w = nil, 0, Walks{} }

// Package jsonlimittest holds what the tests of herald's JSON readers
// share: the worst shapes of JSON a reader can be fed at a given size, and
// a count of the bytes a call allocates, so that each reader's test can
// hold its memory to a fixed multiple of its input.
package jsonlimittest

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/heraldhq/herald/internal/jsonlimit"
)

// Shape is one worst case: a body of about the size asked for.
type Shape struct {
	Name string
	Body []byte
	// Deep is true when Body nests deeper than jsonlimit.MaxDepth, so a
	// reader must refuse it.
	Deep bool
}

// Shapes returns the worst cases for a JSON reader at about size bytes
// (none longer): nesting far past the limit (arrays, objects, and the
// issue's bracket bomb), the deepest accepted nesting filled wide at the
// bottom, one object of many keys, arrays of many small values, and long
// strings of escapes and long numbers. The shapes that are objects hold
// their bulk under "metadata", the one field of the API whose strings may
// hold any character, so that an API reader walks them whole.
func Shapes(size int) []Shape {
	inner := jsonlimit.MaxDepth - 1
	var out []Shape
	add := func(name string, deep bool, b []byte) {
		if len(b) > size {
			panic(fmt.Sprintf("jsonlimittest: %s is %d bytes; asked for at most %d", name, len(b), size))
		}
		out = append(out, Shape{Name: name, Body: b, Deep: deep})
	}
	// wrap puts b inside {"metadata": …}, 13 bytes.
	wrap := func(b string) []byte { return []byte(`{"metadata":` + b + `}`) }
	fill := func(room int, unit string) string {
		return strings.TrimSuffix(strings.Repeat(unit, room/len(unit)), ",")
	}

	n := size / 2
	add("deep arrays", true, []byte(strings.Repeat("[", n)+strings.Repeat("]", n)))
	n = (size - 13 - 1) / 6
	add("deep objects", true, wrap(strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n)))
	n = (size - 13) / 8
	add("deep arrays in objects", true, wrap(strings.Repeat(`{"a":[`, n)+strings.Repeat("]}", n)))

	open, close := strings.Repeat("[", inner), strings.Repeat("]", inner)
	add("deepest accepted arrays, wide at the bottom", false,
		wrap(open[1:]+"["+fill(size-13-2*inner-2, "0,")+"]"+close[1:]))
	open, close = strings.Repeat(`{"a":`, inner-1), strings.Repeat("}", inner-1)
	var keys bytes.Buffer
	for i := 0; keys.Len()+12 < size-13-len(open)-len(close)-2; i++ {
		fmt.Fprintf(&keys, `"%07d":0,`, i)
	}
	add("deepest accepted objects, wide at the bottom", false,
		wrap(open+"{"+strings.TrimSuffix(keys.String(), ",")+"}"+close))

	keys.Reset()
	for i := 0; keys.Len()+11 < size-13-2; i++ {
		fmt.Fprintf(&keys, `"%06d":0,`, i)
	}
	add("one object of many keys", false, wrap("{"+strings.TrimSuffix(keys.String(), ",")+"}"))
	add("an array of zeros", false, wrap("["+fill(size-13-2, "0,")+"]"))
	add("an array of empty strings", false, wrap("["+fill(size-13-2, `"",`)+"]"))
	add("an array of empty arrays", false, wrap("["+fill(size-13-2, "[],")+"]"))
	add("an array of empty objects", false, wrap("["+fill(size-13-2, "{},")+"]"))
	add(`a string of \u0000`, false, wrap(`{"s":"`+fill(size-13-9, `\u0000`)+`"}`))
	add(`a string of \"`, false, wrap(`{"s":"`+fill(size-13-9, `\"`)+`"}`))
	add("a long number", false, wrap(`{"n":1`+fill(size-13-8, "0")+`}`))
	return out
}

// Runs is how many times Allocated runs f at most.
const Runs = 3

// Allocated returns the bytes the runtime allocated while f ran, in every
// goroutine, the least of up to Runs runs of f: it stops at the first run
// within limit. The count is the whole process's, so run it where nothing
// else in the process is busy; but the runtime's own goroutines, and a
// test's helpers winding down, allocate too, and what they add only raises
// a run's count, never lowers it. A reader that truly allocates past limit
// does so every time; a run raised by a neighbour is followed by one that
// is not. f must do the same each time it is called (it reads, or is
// refused).
func Allocated(limit uint64, f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range Runs {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
		if least <= limit {
			break
		}
	}
	return least
}

// Package jsonlimit owns the one bound every JSON reader in herald holds
// to: how deeply a document may nest. encoding/json reads up to 10,000
// levels, and code that does something per level for every value (builds
// a path, writes an indent, recurses) then pays depth × size; refusing
// depth up front, in one pass that allocates nothing, keeps every reader's
// work and memory linear in its input.
//
// The API's body checks, the licensing metadata rule, payload building, the
// portal's signature check, sigcheck and herald listen all use MaxDepth. The
// public webhook module, which imports nothing of herald's, carries the
// same number as its own constant.
package jsonlimit

import (
	"encoding/json"
	"fmt"
)

// MaxDepth is how many levels of objects and arrays a JSON document may
// nest: {"a":[1]} nests 2, a scalar 0.
//
// 64 is far above what any real document reaches: a request body's own
// fields nest at most three levels, a delivery wraps its resource two
// levels in, and metadata, the only JSON a client shapes freely, is capped
// at 16 KiB and in practice nests a handful of levels. It is also below
// what the parsers receivers use accept by default (Ruby's JSON 100,
// serde_json 128, PHP 512, Jackson 1,000), so herald never sends a body a
// receiver's parser refuses for its depth. And it keeps what depth costs
// small where a cost per level remains: a reported path holds at most 64
// segments, an indented line at most 64 indents.
const MaxDepth = 64

// ErrTooDeep is the error of a document nested deeper than MaxDepth.
var ErrTooDeep = fmt.Errorf("JSON nesting deeper than %d levels is refused", MaxDepth)

// Check returns ErrTooDeep when b nests deeper than MaxDepth, and nil
// otherwise. It only counts brackets outside strings and says nothing else
// about b: the reader that follows reports syntax errors.
func Check(b []byte) error {
	if Depth(b, MaxDepth) > MaxDepth {
		return ErrTooDeep
	}
	return nil
}

// Depth returns how deeply b nests, counting the brackets outside strings,
// up to limit+1: it stops reading as soon as b nests deeper than limit. It
// reads each byte once and allocates nothing. Unbalanced brackets (b is not
// valid JSON) count as they come; a closing bracket too many counts as none.
func Depth(b []byte, limit int) int {
	deepest := 0
	Structure(b, func(c byte, depth int) bool {
		deepest = max(deepest, depth)
		return deepest <= limit
	})
	return deepest
}

// Structure calls f for each byte of b outside strings that is JSON's
// structure ([ ] { } , :), in order, with the depth after it (an opening
// bracket counts in, a closing one out), until f returns false. It reads
// each byte once and allocates nothing; it checks nothing else, so b need
// not be valid JSON (a closing bracket too many counts as none).
func Structure(b []byte, f func(c byte, depth int) bool) {
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			continue
		case '[', '{':
			depth++
		case ']', '}':
			depth = max(depth-1, 0)
		case ',', ':':
		default:
			continue
		}
		if !f(c, depth) {
			return
		}
	}
}

// Unmarshal is json.Unmarshal for a document that must nest within
// MaxDepth: a deeper one fails with ErrTooDeep before it is parsed.
func Unmarshal(b []byte, v any) error {
	if err := Check(b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

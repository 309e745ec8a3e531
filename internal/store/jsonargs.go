package store

import "encoding/json"

// Lists as one JSON argument.
//
// A statement over a list of values (ids to lock, outcomes to record, logs
// to insert) is written with a JSON row source instead of n placeholders,
// so that its text, and its prepared form, is the same for any length: a
// statement that changes shape with each batch size is parsed again for
// each, which cost 14% of a busy herald's CPU. Two portable spellings,
// turned into each engine's own by its rebind:
//
//	json_texts(?)  a JSON array of strings; one row per element, its text in column value
//	json_rows(?)   a JSON array of objects; one row per element, fields read as value ->> 'key'
//
// SQLite spells them json_each(?) and jsonb_each(?), which parses the array
// once and hands each object out as JSONB, read by ->> without parsing it
// again (decision 0113); PostgreSQL jsonb_array_elements_text and
// jsonb_array_elements over CAST(? AS jsonb). Fields come back as text
// (PostgreSQL) or their JSON type (SQLite), so numbers are CAST in the SQL.

// JSONTexts is the argument of json_texts(?): never null, so that an empty
// list matches nothing.
func JSONTexts(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v) // strings always marshal
	return string(b)
}

// JSONRows is the argument of json_rows(?), from a slice of structs whose
// JSON keys the statement reads.
func JSONRows(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

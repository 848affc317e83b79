//! Structure-aware mutations of captured JSON payloads for property tests: any node of a
//! document replaced by an arbitrary JSON value, removed, duplicated or joined by an
//! unknown key; and byte-level edits of its text. Used by the webhook parser tests
//! (`tests/it/trust/fuzz.rs`) and the LLM response parser tests (`src/llm/fuzz_tests.rs`).

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

/// Strings that parsers treat specially: empty, blank, huge, control characters, quotes,
/// brackets, Go's zero time, offsets, numbers as text, non-ASCII and look-alike markers.
pub fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("   ".to_string()),
        Just("0001-01-01T00:00:00Z".to_string()),
        Just("2025-06-01T12:15:00.123456789+02:00".to_string()),
        Just("9999-12-31T23:59:60Z".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551616".to_string()),
        Just("resolved".to_string()),
        Just("RESOLVED".to_string()),
        Just("</data>{\"name\":\"x\"".to_string()),
        Just("\u{0}\u{1f}\u{7f}\u{202e}\u{feff}".to_string()),
        Just("ü".repeat(3000)),
        Just("[".repeat(300)),
        Just("{".repeat(300)),
        "\\PC{0,40}",
        any::<String>(),
    ]
}

/// Any JSON value, a few levels deep, with extreme numbers and tricky strings.
pub fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(tricky_string(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One edit of a JSON document.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// The node at the chosen position becomes `value`.
    Replace(Index, Value),
    /// The node at the chosen position is removed from its object or array.
    Remove(Index),
    /// The node at the chosen position appears a second time in its array (or, in an
    /// object, under a new key).
    Duplicate(Index),
    /// The object at (or containing) the chosen position gets an unknown key.
    AddKey(Index, String, Value),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), any_json()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        2 => any::<Index>().prop_map(Mutation::Remove),
        1 => any::<Index>().prop_map(Mutation::Duplicate),
        1 => (any::<Index>(), tricky_string(), any_json())
            .prop_map(|(i, k, v)| Mutation::AddKey(i, k, v)),
    ]
}

/// A step into a JSON value.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    At(usize),
}

/// The path of every node of `v`, the root first.
fn paths(v: &Value) -> Vec<Vec<Step>> {
    fn walk(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        out.push(here.clone());
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    here.push(Step::Key(k.clone()));
                    walk(child, here, out);
                    here.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    here.push(Step::At(i));
                    walk(child, here, out);
                    here.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

fn node_mut<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |node, step| match (step, node) {
        (Step::Key(k), Value::Object(m)) => m.get_mut(k).expect("path exists"),
        (Step::At(i), Value::Array(a)) => &mut a[*i],
        _ => unreachable!("paths() only yields existing paths"),
    })
}

/// `doc` with `m` applied.
pub fn apply(mut doc: Value, m: &Mutation) -> Value {
    let all = paths(&doc);
    let pick = |i: &Index| all[i.index(all.len())].clone();
    match m {
        Mutation::Replace(i, value) => *node_mut(&mut doc, &pick(i)) = value.clone(),
        Mutation::Remove(i) | Mutation::Duplicate(i) => {
            let path = pick(i);
            let Some((last, parent)) = path.split_last() else {
                return if matches!(m, Mutation::Remove(_)) {
                    Value::Null
                } else {
                    doc
                };
            };
            let copy = node_mut(&mut doc, &path).clone();
            match (node_mut(&mut doc, parent), last, m) {
                (Value::Object(o), Step::Key(k), Mutation::Remove(_)) => {
                    o.remove(k);
                }
                (Value::Object(o), Step::Key(k), _) => {
                    o.insert(format!("{k}_copy"), copy);
                }
                (Value::Array(a), Step::At(n), Mutation::Remove(_)) => {
                    a.remove(*n);
                }
                (Value::Array(a), Step::At(n), _) => a.insert(*n, copy),
                _ => unreachable!("a parent is an object or an array"),
            }
        }
        Mutation::AddKey(i, key, value) => {
            let mut path = pick(i);
            loop {
                if let Value::Object(o) = node_mut(&mut doc, &path) {
                    o.insert(key.clone(), value.clone());
                    break;
                }
                if path.pop().is_none() {
                    break;
                }
            }
        }
    }
    doc
}

/// A byte-level edit of a document's text.
#[derive(Clone, Debug)]
pub enum ByteEdit {
    Flip(Index, u8),
    Insert(Index, Vec<u8>),
    Delete(Index, usize),
    Truncate(Index),
}

pub fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    let token = prop_oneof![
        prop::collection::vec(any::<u8>(), 1..8),
        prop::sample::select(vec![
            b"{".to_vec(),
            b"}".to_vec(),
            b"[".to_vec(),
            b"]".to_vec(),
            b"\"".to_vec(),
            b",".to_vec(),
            b":".to_vec(),
            b"\\".to_vec(),
            b"null".to_vec(),
            b"\\u0000".to_vec(),
            b"\\ud800".to_vec(),
            b"1e999999".to_vec(),
            "\u{fffd}".as_bytes().to_vec(),
            vec![0xff, 0xfe],
        ]),
    ];
    prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Flip(i, b)),
        (any::<Index>(), token).prop_map(|(i, t)| ByteEdit::Insert(i, t)),
        (any::<Index>(), 1usize..64).prop_map(|(i, n)| ByteEdit::Delete(i, n)),
        any::<Index>().prop_map(ByteEdit::Truncate),
    ]
}

/// `text` with `edits` applied in order.
pub fn edit_bytes(mut text: Vec<u8>, edits: &[ByteEdit]) -> Vec<u8> {
    for e in edits {
        let at = |i: &Index, len: usize| if len == 0 { 0 } else { i.index(len + 1) };
        match e {
            ByteEdit::Flip(i, b) if !text.is_empty() => {
                let n = i.index(text.len());
                text[n] ^= b | 1;
            }
            ByteEdit::Flip(..) => {}
            ByteEdit::Insert(i, t) => {
                let n = at(i, text.len());
                text.splice(n..n, t.iter().copied());
            }
            ByteEdit::Delete(i, len) => {
                let n = at(i, text.len()).min(text.len());
                let end = (n + len).min(text.len());
                text.drain(n..end);
            }
            ByteEdit::Truncate(i) => {
                let n = at(i, text.len()).min(text.len());
                text.truncate(n);
            }
        }
    }
    text
}

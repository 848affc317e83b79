//! Log lines as a reader wants them shown: a structured (JSON) line becomes its prefix and
//! `key=value` pairs, without the timestamp fields (the fact says when) and with nested
//! objects folded to `{…}`, so the level, the logger, the message and the error fit in the
//! few characters a fact or a tool result has for an example line. Display only: patterns
//! and the regexes built from them keep the raw line.

/// Keys that hold the line's own timestamp in the common JSON loggers (zap `ts`, logrus,
/// slog, bunyan and pino `time`, Elastic's `@timestamp`).
const TIME_KEYS: [&str; 4] = ["ts", "time", "timestamp", "@timestamp"];

/// `line` with a JSON object in it shown as `key=value` pairs; other lines as they are.
pub fn readable_line(line: &str) -> String {
    let line = line.trim();
    let Some(open) = line.find('{') else {
        return line.to_string();
    };
    let (prefix, body) = line.split_at(open);
    let Some((pairs, rest)) = members(body) else {
        return line.to_string();
    };
    if pairs.len() < 2 {
        return line.to_string();
    }
    let mut out = prefix.trim_end().to_string();
    for (k, v) in pairs
        .iter()
        .filter(|(k, _)| !TIME_KEYS.contains(&k.as_str()))
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(k);
        out.push('=');
        if v.is_empty() || v.contains(char::is_whitespace) {
            out.push('"');
            out.push_str(v);
            out.push('"');
        } else {
            out.push_str(v);
        }
    }
    let rest = rest.trim();
    if !rest.is_empty() {
        out.push(' ');
        out.push_str(rest);
    }
    out
}

/// The top-level members of the JSON object `body` starts with (values of nested objects
/// and arrays as `{…}`/`[…]`) and the text after it; `None` when `body` is not an object.
/// Tolerant: a line cut short keeps the members before the cut, and a placeholder such as
/// `<n>` is read as a bare value.
fn members(body: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut it = body.char_indices().peekable();
    if it.next()?.1 != '{' {
        return None;
    }
    let mut pairs = Vec::new();
    loop {
        skip_space(&mut it);
        match it.next() {
            Some((_, '"')) => {}
            Some((i, '}')) => return Some((pairs, &body[i + 1..])),
            _ => return (!pairs.is_empty()).then_some((pairs, "")),
        }
        let (key, closed) = string(&mut it);
        if !closed {
            return None;
        }
        skip_space(&mut it);
        if it.next()?.1 != ':' {
            return None;
        }
        skip_space(&mut it);
        let value = match it.peek().map(|&(_, c)| c) {
            Some('"') => {
                it.next();
                let (v, closed) = string(&mut it);
                if !closed {
                    pairs.push((key, format!("{v}…")));
                    return Some((pairs, ""));
                }
                v
            }
            Some(c @ ('{' | '[')) => {
                skip_nested(&mut it);
                if c == '{' { "{…}" } else { "[…]" }.to_string()
            }
            Some(_) => {
                let mut v = String::new();
                while let Some(&(_, c)) = it.peek() {
                    if c == ',' || c == '}' {
                        break;
                    }
                    v.push(c);
                    it.next();
                }
                v.trim().to_string()
            }
            None => return Some((pairs, "")),
        };
        pairs.push((key, value));
        skip_space(&mut it);
        match it.peek().map(|&(_, c)| c) {
            Some(',') => {
                it.next();
            }
            Some('}') => {}
            _ => return Some((pairs, "")),
        }
    }
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

fn skip_space(it: &mut Chars) {
    while it.peek().is_some_and(|&(_, c)| c.is_whitespace()) {
        it.next();
    }
}

/// The rest of a JSON string (after its opening quote), escapes decoded, and whether it
/// was closed (a line cut short ends inside one).
fn string(it: &mut Chars) -> (String, bool) {
    let mut s = String::new();
    while let Some((_, c)) = it.next() {
        match c {
            '"' => return (s, true),
            '\\' => match it.next() {
                Some((_, 'n' | 'r' | 't')) => s.push(' '),
                Some((_, other)) => s.push(other),
                None => break,
            },
            c => s.push(c),
        }
    }
    (s, false)
}

/// Skips a nested object or array (strings inside may hold brackets).
fn skip_nested(it: &mut Chars) {
    let mut depth = 0usize;
    while let Some((_, c)) = it.next() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return;
                }
            }
            '"' if !string(it).1 => return,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_line_shows_its_fields_without_its_timestamp_and_with_nested_objects_folded() {
        let line = r#"caddy[733]: {"level":"error","ts":1732670000.5,"logger":"tls.renew","msg":"could not get certificate","request":{"host":"a","headers":{"x":["}"]}},"status":502,"error":"HTTP 400 \"urn:acme\" - timeout"}"#;
        assert_eq!(
            readable_line(line),
            r#"caddy[733]: level=error logger=tls.renew msg="could not get certificate" request={…} status=502 error="HTTP 400 "urn:acme" - timeout""#
        );
    }

    #[test]
    fn patterns_cut_lines_and_plain_lines_are_read_as_far_as_they_go() {
        assert_eq!(
            readable_line(r#"{"time":"<ts>","level":"warn","msg":"slow <n> ms","n":<n>}"#),
            r#"level=warn msg="slow <n> ms" n=<n>"#
        );
        assert_eq!(
            readable_line(r#"app: {"level":"error","msg":"disk full","path":"/va"#),
            r#"app: level=error msg="disk full" path=/va…"#
        );
        for plain in [
            "kernel: EXT4-fs error (device sda1): remounting read-only",
            "set {a} to {",
            "{\"only\":\"one\"}",
            "{}",
            "ünï {\"é\":\"ß\",\"ç\":1} tail",
        ] {
            let shown = readable_line(plain);
            assert!(!shown.is_empty(), "{plain}");
            if !plain.starts_with('ü') {
                assert_eq!(shown, plain);
            }
        }
        assert_eq!(
            readable_line("ünï {\"é\":\"ß\",\"ç\":1} tail"),
            "ünï é=ß ç=1 tail"
        );
    }
}

//! The pattern of a log line: the line with timestamps, uuids, IPs, hex ids and numbers
//! replaced by placeholders, so lines that differ only in those group together (the log
//! analyzer's most frequent error, the Loki tools' grouped lines).

use crate::text::truncate;

/// The placeholder for a token (a run of letters, digits and `.:-_`) holding a digit.
fn placeholder(tok: &str) -> Option<&'static str> {
    let b = tok.as_bytes();
    let is_hex = |s: &str| s.bytes().all(|c| c.is_ascii_hexdigit());
    if b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && is_hex(&tok.replace('-', ""))
    {
        return Some("<uuid>");
    }
    if b.len() >= 19
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[..4].iter().all(u8::is_ascii_digit)
    {
        return Some("<ts>");
    }
    let host = tok.split_once(':').map_or(tok, |(h, p)| {
        if p.bytes().all(|c| c.is_ascii_digit()) {
            h
        } else {
            ""
        }
    });
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() == 4
        && parts
            .iter()
            .all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()))
    {
        return Some("<ip>");
    }
    let hex = tok.strip_prefix("0x").unwrap_or(tok);
    if hex.len() >= 6 && is_hex(hex) && hex.bytes().any(|c| c.is_ascii_alphabetic()) {
        return Some("<hex>");
    }
    None
}

/// `tok` with each run of hex digits mixing digits and letters (`veth1a2b3c4`,
/// `d41d8cd9-0f00`) replaced by `<hex>` and each number (digits, optionally `.digits`) by
/// `<n>`: generated ids vary line to line and must not split a pattern.
fn replace_numbers(tok: &str, out: &mut String) {
    let b = tok.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        let id = &b[i..i + run];
        if run >= 4 && id.iter().any(u8::is_ascii_digit) && id.iter().any(u8::is_ascii_alphabetic) {
            out.push_str("<hex>");
            i += run;
        } else if b[i].is_ascii_digit() {
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || (b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
            {
                i += 1;
            }
            out.push_str("<n>");
        } else {
            // Tokens are ASCII letters, digits and `.:-_` only: one byte is one char.
            out.push(b[i] as char);
            i += 1;
        }
    }
}

/// The pattern of a log line: timestamps, uuids, IPs, hex ids and numbers replaced by
/// placeholders, so lines differing only in those group together. One pass, no regex:
/// this runs on every line Loki returns.
pub fn line_pattern(line: &str) -> String {
    let line = truncate(line.trim(), 400);
    let mut out = String::with_capacity(line.len());
    let is_tok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '-' | '_');
    let mut rest = line.as_str();
    while !rest.is_empty() {
        let end = rest.find(|c| !is_tok(c)).unwrap_or(rest.len());
        if end == 0 {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let whole = &rest[..end];
        // A token's trailing `:`/`.`/`-` (postfix's `4F1A82C0B1:`) is punctuation, not id.
        let tok = whole.trim_end_matches([':', '.', '-', '_']);
        let tail = &whole[tok.len()..];
        if !tok.bytes().any(|c| c.is_ascii_digit()) {
            out.push_str(tok);
        } else if let Some(p) = placeholder(tok) {
            out.push_str(p);
        } else {
            replace_numbers(tok, &mut out);
        }
        out.push_str(tail);
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_in_the_usual_places_become_placeholders() {
        let cases = [
            (
                "postfix/qmgr[812]: 4F1A82C0B1: removed",
                "postfix/qmgr[<n>]: <hex>: removed",
            ),
            (
                "postfix/qmgr[812]: 1234567890: removed",
                "postfix/qmgr[<n>]: <n>: removed",
            ),
            (
                "[ 12.5] vetha0653e4: renamed from eth0",
                "[ <n>] veth<hex>: renamed from eth<n>",
            ),
            (
                "[ 12.5] veth1a2b3c4: renamed from eth0",
                "[ <n>] veth<hex>: renamed from eth<n>",
            ),
            ("job d41d8cd9-0f0a done", "job <hex>-<hex> done"),
            ("job 5b2c at 10.0.0.1:587.", "job <hex> at <ip>."),
            ("x86_64 h264 ok", "x<n>_<n> h<n> ok"),
        ];
        for (line, want) in cases {
            assert_eq!(line_pattern(line), want, "{line}");
        }
    }
}

//! Untrusted text (alert labels and annotations, and findings written from them) made inert
//! for each place a notification lands: Slack's control sequences (`<!channel>`, `<@U…>`,
//! `<https://…|…>`) escaped the way Slack asks (`&`, `<`, `>`), mentions (`@everyone`,
//! `@here`, `@channel`, `@name`, Discord's `<@…>`) broken with a zero-width space so chat
//! shows them without notifying anyone, and links limited to web URLs: the one check the
//! console's pages use too; a markdown link in alert text whose target is not one
//! (`[click](javascript:…)`) is left as text.

/// Put after the `@` of a mention: invisible, and no chat service reads a mention through it.
const ZERO_WIDTH_SPACE: char = '\u{200B}';

/// `url` when it is an http(s) URL (never `javascript:`, `data:` and the like), for links.
pub fn safe_url(url: &str) -> Option<&str> {
    let lower = url.trim_start().to_ascii_lowercase();
    let web = lower.starts_with("http://") || lower.starts_with("https://");
    (web && !url.chars().any(char::is_control)).then_some(url)
}

/// `url` as the target of a markdown link: characters that would end the target or start
/// markup of their own are percent-encoded.
pub fn markdown_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.chars() {
        match c {
            ' ' => out.push_str("%20"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            '[' => out.push_str("%5B"),
            ']' => out.push_str("%5D"),
            c => out.push(c),
        }
    }
    out
}

/// `md` with every markdown link whose target is not a web URL turned into text: its `(`
/// escaped, so `[label](javascript:…)` shows as written.
pub fn inert_links(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut rest = md;
    while let Some((before, after)) = rest.split_once("](") {
        out.push_str(before);
        let target = after
            .trim_start()
            .trim_start_matches('<')
            .split(|c: char| c.is_whitespace() || c == ')' || c == '>')
            .next()
            .unwrap_or("");
        out.push_str(if safe_url(target).is_some() {
            "]("
        } else {
            "]\\("
        });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Text for a Slack (or Mattermost) message: `&`, `<` and `>` escaped, so no `<!channel>`,
/// `<@U…>` or `<url|label>` is read as markup, and no mention notifies.
pub fn slack_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in break_mentions(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` with a zero-width space after the `@` of every mention: an `@` that starts a word
/// (`@everyone`, `@here`, `@name`, `<@123>`, `<@&role>`), not the one inside a mail address.
pub fn break_mentions(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut previous: Option<char> = None;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        let starts_word = previous.is_none_or(|p| !p.is_alphanumeric() && p != '.' && p != '_');
        let mention = chars
            .peek()
            .is_some_and(|n| n.is_alphanumeric() || matches!(n, '&' | '!' | '#' | '_'));
        if c == '@' && starts_word && mention {
            out.push(ZERO_WIDTH_SPACE);
        }
        previous = Some(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_links_pass() {
        assert_eq!(safe_url("https://grafana/d/x"), Some("https://grafana/d/x"));
        assert_eq!(safe_url("HTTP://grafana/"), Some("HTTP://grafana/"));
        for bad in [
            "javascript:alert(1)",
            " JaVaScRiPt:alert(1)",
            "data:text/html,x",
            "vbscript:x",
            "file:///etc/passwd",
            "//evil.example",
            "https://x\n/y",
            "",
        ] {
            assert_eq!(safe_url(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn mentions_are_broken_and_mail_addresses_kept() {
        let z = ZERO_WIDTH_SPACE;
        assert_eq!(
            break_mentions("@everyone hi @here, <@U1> <@&2> <@!3> ops@example.org a @ b"),
            format!("@{z}everyone hi @{z}here, <@{z}U1> <@{z}&2> <@{z}!3> ops@example.org a @ b")
        );
        assert_eq!(break_mentions("Ünïcode @ü"), format!("Ünïcode @{z}ü"));
        assert_eq!(break_mentions("@"), "@");
    }

    #[test]
    fn slack_text_has_no_markup_left() {
        assert_eq!(
            slack_text("<!channel> <https://evil|x> a&b"),
            "&lt;!channel&gt; &lt;https://evil|x&gt; a&amp;b"
        );
        assert_eq!(
            inert_links("[a](https://x/y) [b](javascript:alert(1)) [c]( <data:x>) [d](/x) e](f"),
            "[a](https://x/y) [b]\\(javascript:alert(1)) [c]\\( <data:x>) [d]\\(/x) e]\\(f"
        );
        assert_eq!(inert_links("no links ü"), "no links ü");
        assert_eq!(
            markdown_url("https://x/a b)(c)[d]<e>"),
            "https://x/a%20b%29%28c%29%5Bd%5D%3Ce%3E"
        );
    }
}

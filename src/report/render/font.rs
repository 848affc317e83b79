//! The chart font: DejaVu Sans, a 22 KB subset (printable ASCII, Latin-1, dashes, quotes;
//! see `assets/fonts/README.md` and its license there) embedded in the binary, so charts
//! carry text on machines without fonts. Glyphs are rasterised by ab_glyph with
//! anti-aliasing (coverage 0–1 per pixel); characters outside the subset draw
//! as `?`.

use ab_glyph::{Font, FontRef, Glyph, GlyphId, PxScale, ScaleFont, point};

static DEJAVU_SANS: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-subset.ttf");

/// The embedded font. Parsing reads only the table directory, so it is done per call
/// rather than kept in a global; `None` only if the embedded file were corrupt (a unit
/// test parses it), in which case charts have no text but still draw.
fn font() -> Option<FontRef<'static>> {
    FontRef::try_from_slice(DEJAVU_SANS).ok()
}

fn glyph_id(font: &FontRef<'_>, c: char) -> GlyphId {
    match font.glyph_id(c) {
        GlyphId(0) => font.glyph_id('?'),
        id => id,
    }
}

/// The glyphs of `s` at `size` pixels from x = 0 on the baseline y = 0. (The subset keeps
/// DejaVu's kerning only as an OpenType feature, which ab_glyph does not apply.)
fn layout(font: &FontRef<'_>, s: &str, size: f32) -> (Vec<Glyph>, f32) {
    let scaled = font.as_scaled(PxScale::from(size));
    let mut x = 0.0;
    let mut glyphs = Vec::with_capacity(s.len());
    for c in s.chars() {
        let id = glyph_id(font, c);
        glyphs.push(id.with_scale_and_position(size, point(x, 0.0)));
        x += scaled.h_advance(id);
    }
    (glyphs, x)
}

/// Width in whole pixels of `s` drawn at `size`.
pub fn width(s: &str, size: f32) -> u32 {
    font().map_or(0, |f| layout(&f, s, size).1.ceil() as u32)
}

/// Height of a capital letter (and of digits) above the baseline at `size`, in pixels.
pub fn cap_height(size: f32) -> u32 {
    let Some(f) = font() else {
        return size as u32;
    };
    let h = glyph_id(&f, 'H').with_scale_and_position(size, point(0.0, 0.0));
    f.outline_glyph(h)
        .map_or(size * 0.73, |o| o.px_bounds().height())
        .round() as u32
}

/// The longest prefix of `s` (whole characters) no wider than `max` pixels at `size`.
pub fn fit(s: &str, size: f32, max: u32) -> &str {
    let mut end = s.len();
    while end > 0 && width(&s[..end], size) > max {
        end = s[..end].char_indices().last().map_or(0, |(i, _)| i);
    }
    &s[..end]
}

/// Draws `s` at `size` pixels with the top of its capitals at (`x`, `top`), calling
/// `plot(x, y, coverage)` for every touched pixel (coverage in 0–1, never 0).
pub fn draw(s: &str, x: u32, top: u32, size: f32, mut plot: impl FnMut(u32, u32, f32)) {
    let Some(f) = font() else {
        return;
    };
    // A whole-pixel baseline keeps the flat tops and bottoms of letters sharp.
    let baseline = (top + cap_height(size)) as f32;
    for mut g in layout(&f, s, size).0 {
        g.position = point(g.position.x + x as f32, baseline);
        let Some(outline) = f.outline_glyph(g) else {
            continue; // a space
        };
        let b = outline.px_bounds();
        outline.draw(|gx, gy, coverage| {
            let (px, py) = (b.min.x as i64 + gx as i64, b.min.y as i64 + gy as i64);
            if coverage > 0.0 && px >= 0 && py >= 0 {
                plot(px as u32, py as u32, coverage.min(1.0));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pixels drawn for `s` and how many of them are partly covered (anti-aliased).
    fn coverage(s: &str, size: f32) -> (usize, usize) {
        let mut touched = std::collections::HashMap::new();
        draw(s, 2, 2, size, |x, y, c| {
            *touched.entry((x, y)).or_insert(0.0) += c;
        });
        let partial = touched.values().filter(|c| **c < 0.95).count();
        (touched.len(), partial)
    }

    #[test]
    fn the_embedded_font_parses_and_has_the_characters_charts_use() {
        let f = font().expect("embedded font parses");
        for c in ('!'..='~').chain("–—…·°±×µé".chars()) {
            assert_ne!(f.glyph_id(c), GlyphId(0), "{c:?} missing");
        }
    }

    #[test]
    fn text_is_anti_aliased_not_a_pixel_font() {
        let (all, partial) = coverage("Alert episodes per day 99.5%", 13.0);
        assert!(all > 300, "{all}");
        // A pixel font would be all or nothing; outlines have soft edges.
        assert!(partial * 4 > all, "{partial} of {all} partly covered");
    }

    #[test]
    fn wider_text_measures_wider_and_capitals_have_the_expected_height() {
        assert_eq!(width("", 13.0), 0);
        assert!(width("Mon 16", 13.0) > width("Mo", 13.0));
        assert!(width("Mon 16", 16.0) > width("Mon 16", 13.0));
        let cap = cap_height(13.0);
        assert!((8..=11).contains(&cap), "{cap}");
    }

    #[test]
    fn characters_outside_the_subset_draw_as_a_question_mark() {
        let mut a = Vec::new();
        draw("\u{4e2d}", 0, 0, 13.0, |x, y, c| {
            a.push((x, y, c.to_bits()))
        });
        let mut q = Vec::new();
        draw("?", 0, 0, 13.0, |x, y, c| q.push((x, y, c.to_bits())));
        assert!(!q.is_empty());
        assert_eq!(a, q);
    }

    #[test]
    fn fit_cuts_long_text_on_a_character_boundary() {
        let s = "Mean availability per day – a very long title that cannot fit";
        let cut = fit(s, 16.0, 200);
        assert!(cut.len() < s.len() && width(cut, 16.0) <= 200);
        assert!(s.starts_with(cut));
        assert_eq!(fit("short", 16.0, 200), "short");
    }
}

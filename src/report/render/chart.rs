//! PNG bar charts drawn in Rust, readable on their own: a title, y-axis ticks, day labels
//! under the bars and values above them where they fit. Text is anti-aliased from the
//! embedded font (`font`; the deployment machine has no fonts). Indexed colour (a few
//! shades per text colour for the soft edges) keeps each image a few kilobytes, as they
//! travel inline in the email.

use super::font;
use super::number::fixed;

/// A rendered chart and its text equivalent.
#[derive(Clone, Debug)]
pub struct Chart {
    pub content_id: &'static str,
    pub title: &'static str,
    /// The chart as text, every value included: the HTML `alt` and the plain-text line.
    pub alt: String,
    pub png: Vec<u8>,
}

/// Image size in pixels.
pub const WIDTH: u32 = 640;
pub const HEIGHT: u32 = 250;

/// Text sizes in pixels.
const TITLE_SIZE: f32 = 16.0;
const LABEL_SIZE: f32 = 13.0;

const TITLE_Y: u32 = 10;
/// Room for the y-axis labels ("99.5%", "1000") to the left of the plot.
const PLOT_LEFT: u32 = 64;
const PLOT_RIGHT: u32 = WIDTH - 12;
/// Leaves room for a value label above a full-height bar, below the title.
const PLOT_TOP: u32 = TITLE_Y + 44;
/// The x axis; day labels go below it.
const PLOT_BOTTOM: u32 = HEIGHT - 34;
const X_LABEL_Y: u32 = PLOT_BOTTOM + 10;
/// Horizontal space kept between two labels.
const LABEL_GAP: u32 = 6;

/// Palette indices (the PNG is indexed: one byte a pixel before compression). After the
/// flat colours come `SHADES` shades of each text colour, lightest first, ending at the
/// full colour: the anti-aliased edges.
const BG: u8 = 0;
const GRID: u8 = 1;
const AXIS: u8 = 2;
const BAR: u8 = 3;
const SHADES: u8 = 8;
const TEXT: u8 = 4;
const MUTED: u8 = TEXT + SHADES;
const WHITE: [u8; 3] = [255, 255, 255];
const FLAT: [[u8; 3]; 3] = [WHITE, [225, 228, 232], [120, 120, 120]];
const TEXT_RGB: [u8; 3] = [31, 35, 40];
const MUTED_RGB: [u8; 3] = [87, 96, 106];

/// `ink` laid over white at `level` of `SHADES`.
fn shade(ink: [u8; 3], level: u8) -> [u8; 3] {
    let a = f32::from(level) / f32::from(SHADES);
    ink.map(|c| (255.0 + (f32::from(c) - 255.0) * a).round() as u8)
}

/// The shade level (1..=`SHADES`) of a text pixel, `None` for any other colour.
fn ink_level(index: u8) -> Option<u8> {
    (TEXT..MUTED + SHADES)
        .contains(&index)
        .then(|| (index - TEXT) % SHADES + 1)
}

struct Canvas {
    px: Vec<u8>,
}

impl Canvas {
    fn new() -> Self {
        Self {
            px: vec![BG; (WIDTH * HEIGHT) as usize],
        }
    }

    fn rect(&mut self, x0: u32, y0: u32, x1: u32, y1: u32, c: u8) {
        for y in y0.min(HEIGHT)..y1.min(HEIGHT) {
            let row = (y * WIDTH) as usize;
            self.px[row + x0.min(WIDTH) as usize..row + x1.min(WIDTH) as usize].fill(c);
        }
    }

    /// Draws `s` at `size` with the top of its capitals at (`x`, `top`) in `ink` (`TEXT`
    /// or `MUTED`). Faint edge pixels do not cover grid lines or bars.
    fn text(&mut self, x: u32, top: u32, s: &str, size: f32, ink: u8) {
        let px = &mut self.px;
        font::draw(s, x, top, size, |x, y, coverage| {
            if x >= WIDTH || y >= HEIGHT {
                return;
            }
            let level = (coverage * f32::from(SHADES)).round() as u8;
            let at = &mut px[(y * WIDTH + x) as usize];
            let keep = match ink_level(*at) {
                // Overlapping edges of two glyphs keep the darker shade.
                Some(existing) => existing >= level,
                None => *at != BG && level < SHADES / 2,
            };
            if level > 0 && !keep {
                *at = ink + level - 1;
            }
        });
    }

    fn encode(self, bar: [u8; 3]) -> Vec<u8> {
        let mut palette: Vec<u8> = FLAT.concat();
        palette.extend_from_slice(&bar);
        for ink in [TEXT_RGB, MUTED_RGB] {
            for level in 1..=SHADES {
                palette.extend_from_slice(&shade(ink, level));
            }
        }
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, WIDTH, HEIGHT);
        enc.set_color(png::ColorType::Indexed);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_palette(palette);
        enc.set_compression(png::Compression::Best);
        // Filters do not help palette images; deflate alone compresses the flat areas.
        enc.set_filter(png::FilterType::NoFilter);
        let written = enc
            .write_header()
            .and_then(|mut w| w.write_image_data(&self.px));
        debug_assert!(written.is_ok(), "in-memory PNG encoding cannot fail");
        out
    }
}

/// Width in pixels of a label drawn.
fn text_width(s: &str) -> u32 {
    font::width(s, LABEL_SIZE)
}

/// Height of digits and capitals of a label above its baseline.
fn cap_h() -> u32 {
    font::cap_height(LABEL_SIZE)
}

/// The y axis: from `lo` to `hi` with a labelled grid line every `step`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Scale {
    lo: f64,
    hi: f64,
    step: f64,
    suffix: &'static str,
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.max(1e-9).log10().floor());
    let f = raw / mag;
    let n = [1.0, 2.0, 5.0]
        .into_iter()
        .find(|n| f <= *n)
        .unwrap_or(10.0);
    n * mag
}

impl Scale {
    /// 0 up to a round number at or above `max`, in whole steps.
    fn counts(max: f64) -> Self {
        let step = nice_step(max.max(1.0) / 4.0).max(1.0);
        Self {
            lo: 0.0,
            hi: (max.max(1.0) / step).ceil() * step,
            step,
            suffix: "",
        }
    }

    /// Percent up to 100, zoomed in below `min` so that small dips are visible.
    fn percent(min: f64) -> Self {
        let min = min.clamp(0.0, 100.0);
        let step = nice_step((100.0 - min + 0.5) / 4.0);
        let lo = ((min - step / 2.0) / step).floor() * step;
        Self {
            lo: lo.min(100.0 - 3.0 * step).max(0.0),
            hi: 100.0,
            step,
            suffix: "%",
        }
    }

    fn ticks(&self) -> Vec<f64> {
        let n = ((self.hi - self.lo) / self.step).round() as u32;
        (0..=n).map(|i| self.lo + self.step * i as f64).collect()
    }

    /// Decimals that tell the ticks apart.
    fn decimals(&self) -> usize {
        (-self.step.log10().floor()).max(0.0) as usize
    }

    fn label(&self, v: f64, extra_decimals: usize) -> String {
        let decimals = self.decimals() + extra_decimals;
        format!("{}{}", fixed(v, decimals), self.suffix)
    }

    /// The pixel row of `v`, clamped to the plot.
    fn y(&self, v: f64) -> u32 {
        let frac = ((v - self.lo) / (self.hi - self.lo).max(f64::EPSILON)).clamp(0.0, 1.0);
        PLOT_BOTTOM - (frac * (PLOT_BOTTOM - PLOT_TOP) as f64).round() as u32
    }
}

/// Every how many bars a day label fits without touching its neighbours.
fn label_every(labels: &[String], slot: u32) -> usize {
    let widest = labels.iter().map(|l| text_width(l)).max().unwrap_or(0);
    (widest + LABEL_GAP).div_ceil(slot.max(1)).max(1) as usize
}

/// One bar per day.
struct BarChart<'a> {
    title: &'a str,
    days: Vec<&'a str>,
    values: Vec<f64>,
    scale: Scale,
    /// Decimals added to the scale's for the values above the bars.
    value_decimals: usize,
    color: [u8; 3],
}

impl BarChart<'_> {
    fn draw(&self) -> Vec<u8> {
        let mut c = Canvas::new();
        let title = font::fit(self.title, TITLE_SIZE, WIDTH - 8);
        let title_x = (WIDTH - font::width(title, TITLE_SIZE)) / 2;
        c.text(title_x, TITLE_Y, title, TITLE_SIZE, TEXT);
        let cap = cap_h();
        for t in self.scale.ticks() {
            let y = self.scale.y(t);
            c.rect(PLOT_LEFT, y, PLOT_RIGHT, y + 1, GRID);
            let label = self.scale.label(t, 0);
            let x = (PLOT_LEFT - 8).saturating_sub(text_width(&label));
            c.text(x, y.saturating_sub(cap / 2), &label, LABEL_SIZE, MUTED);
        }
        c.rect(PLOT_LEFT, PLOT_BOTTOM, PLOT_RIGHT, PLOT_BOTTOM + 1, AXIS);
        c.rect(PLOT_LEFT, PLOT_TOP, PLOT_LEFT + 1, PLOT_BOTTOM + 1, AXIS);

        let n = self.values.len().max(1) as u32;
        let slot = (PLOT_RIGHT - PLOT_LEFT - 2) / n;
        let labels: Vec<String> = self.days.iter().map(|d| d.to_string()).collect();
        let every = label_every(&labels, slot);
        let decimals = self.scale.decimals() + self.value_decimals;
        let fits = |v: &Vec<String>| v.iter().all(|v| text_width(v) + LABEL_GAP <= slot);
        // Values with their unit if they fit, else bare numbers (the axis has the unit).
        let with_unit: Vec<String> = self
            .values
            .iter()
            .map(|v| self.scale.label(*v, self.value_decimals))
            .collect();
        let bare: Vec<String> = self.values.iter().map(|v| fixed(*v, decimals)).collect();
        let values = [with_unit, bare].into_iter().find(fits);
        for (i, v) in self.values.iter().enumerate() {
            let left = PLOT_LEFT + 2 + slot * i as u32;
            let centre = left + slot / 2;
            let top = self.scale.y(*v);
            let (x0, x1) = (left + slot / 6, left + slot - slot / 6);
            c.rect(x0, top, x1.max(x0 + 1), PLOT_BOTTOM, BAR);
            if let Some(value) = values.as_ref().map(|v| &v[i]) {
                let w = text_width(value);
                c.text(centre - w / 2, top - 5 - cap, value, LABEL_SIZE, TEXT);
            }
            if i % every == 0
                && let Some(day) = labels.get(i)
            {
                let w = text_width(day);
                let x = centre.saturating_sub(w / 2).min(WIDTH - w);
                c.text(x, X_LABEL_Y, day, LABEL_SIZE, MUTED);
            }
        }
        c.encode(self.color)
    }
}

/// Alert episodes started per day.
pub fn alerts_per_day(per_day: &[(String, u32)]) -> Chart {
    let max = per_day.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let title = "Alert episodes per day";
    Chart {
        content_id: "alerts-per-day",
        title,
        alt: format!(
            "{title}: {}",
            per_day
                .iter()
                .map(|(d, n)| format!("{d}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        png: BarChart {
            title,
            days: per_day.iter().map(|(d, _)| d.as_str()).collect(),
            values: per_day.iter().map(|(_, n)| *n as f64).collect(),
            scale: Scale::counts(max as f64),
            value_decimals: 0,
            color: [214, 69, 65],
        }
        .draw(),
    }
}

/// Mean availability per day, on a zoomed scale so small dips are visible.
pub fn availability_per_day(per_day: &[(String, f64)]) -> Chart {
    let values: Vec<f64> = per_day.iter().map(|(_, v)| v * 100.0).collect();
    let min = values.iter().copied().fold(100.0, f64::min);
    let title = "Mean availability per day";
    Chart {
        content_id: "availability-per-day",
        title,
        alt: format!(
            "{title}: {}",
            per_day
                .iter()
                .map(|(d, v)| format!("{d}: {:.2}%", v * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        png: BarChart {
            title,
            days: per_day.iter().map(|(d, _)| d.as_str()).collect(),
            values,
            scale: Scale::percent(min),
            value_decimals: 1,
            color: [46, 139, 87],
        }
        .draw(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chart decoded to RGB rows.
    fn decode(chart: &Chart) -> Vec<[u8; 3]> {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(&chart.png));
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (WIDTH, HEIGHT));
        let mut buf = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut buf).unwrap();
        assert_eq!(frame.color_type, png::ColorType::Rgb);
        buf.chunks_exact(3).map(|p| [p[0], p[1], p[2]]).collect()
    }

    /// Pixels of text colour in the rectangle `x0..x1` × `y0..y1`.
    fn text_pixels(px: &[[u8; 3]], (x0, y0, x1, y1): (u32, u32, u32, u32)) -> usize {
        // Text pixels at least half covered.
        let ink: Vec<[u8; 3]> = [TEXT_RGB, MUTED_RGB]
            .into_iter()
            .flat_map(|c| (SHADES / 2..=SHADES).map(move |l| shade(c, l)))
            .collect();
        (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter(|(x, y)| ink.contains(&px[(y * WIDTH + x) as usize]))
            .count()
    }

    const TITLE_AREA: (u32, u32, u32, u32) = (0, 0, WIDTH, TITLE_Y + 20);
    const Y_LABEL_AREA: (u32, u32, u32, u32) = (0, PLOT_TOP - 16, PLOT_LEFT - 4, PLOT_BOTTOM + 12);
    const X_LABEL_AREA: (u32, u32, u32, u32) = (PLOT_LEFT, PLOT_BOTTOM + 2, WIDTH, HEIGHT);

    fn week() -> Vec<(String, u32)> {
        [
            "Mon 16", "Tue 17", "Wed 18", "Thu 19", "Fri 20", "Sat 21", "Sun 22",
        ]
        .iter()
        .zip([2, 0, 5, 1, 0, 7, 3])
        .map(|(d, n)| (d.to_string(), n))
        .collect()
    }

    #[test]
    fn the_title_the_y_axis_labels_and_the_day_labels_are_drawn_as_text() {
        let alerts = alerts_per_day(&week());
        let avail = availability_per_day(&[("Mon 16".into(), 0.999), ("Tue 17".into(), 0.97)]);
        for chart in [&alerts, &avail] {
            let px = decode(chart);
            for (name, area) in [
                ("title", TITLE_AREA),
                ("y labels", Y_LABEL_AREA),
                ("day labels", X_LABEL_AREA),
            ] {
                assert!(text_pixels(&px, area) > 40, "{}: no {name}", chart.title);
            }
        }
    }

    #[test]
    fn different_day_labels_change_only_the_pixels_under_the_axis() {
        let a = week();
        let mut b = week();
        b[2].0 = "Xyz 99".into();
        let (pa, pb) = (decode(&alerts_per_day(&a)), decode(&alerts_per_day(&b)));
        let split = (PLOT_BOTTOM + 2) * WIDTH;
        assert_eq!(pa[..split as usize], pb[..split as usize]);
        assert_ne!(pa[split as usize..], pb[split as usize..]);
    }

    /// Text pixels right above bar `i` of `n`, whose colour is `bar`.
    fn value_label_pixels(px: &[[u8; 3]], i: u32, n: u32, bar: [u8; 3]) -> usize {
        let slot = (PLOT_RIGHT - PLOT_LEFT - 2) / n;
        let centre = PLOT_LEFT + 2 + slot * i + slot / 2;
        let top = (PLOT_TOP..PLOT_BOTTOM)
            .find(|y| px[(y * WIDTH + centre) as usize] == bar)
            .unwrap();
        text_pixels(
            px,
            (centre - slot / 2, top - 5 - cap_h(), centre + slot / 2, top),
        )
    }

    #[test]
    fn different_values_change_the_value_labels_above_the_bars() {
        let px = decode(&alerts_per_day(&week()));
        // The tallest bar (7, Saturday) has its number right above it.
        assert!(value_label_pixels(&px, 5, 7, [214, 69, 65]) > 10);
        let mut other = week();
        other[5].1 = 8;
        let po = decode(&alerts_per_day(&other));
        assert_ne!(px, po);
    }

    #[test]
    fn a_week_and_a_day_of_availability_keeps_a_value_above_every_bar() {
        let days: Vec<(String, f64)> = (16..24)
            .map(|d| (format!("Mon {d}"), 1.0 - d as f64 / 5000.0))
            .collect();
        let px = decode(&availability_per_day(&days));
        for i in 0..8 {
            assert!(value_label_pixels(&px, i, 8, [46, 139, 87]) > 10, "bar {i}");
        }
    }

    #[test]
    fn a_month_of_days_thins_the_day_labels_and_drops_the_crowded_values() {
        let month: Vec<(String, u32)> = (1..=31).map(|d| (format!("Day {d}"), d)).collect();
        let slot = (PLOT_RIGHT - PLOT_LEFT - 2) / 31;
        let labels: Vec<String> = month.iter().map(|(d, _)| d.clone()).collect();
        let every = label_every(&labels, slot);
        assert!(every > 1 && every as u32 * slot >= text_width("Day 31") + LABEL_GAP);
        assert_eq!(
            label_every(&labels[..7], (PLOT_RIGHT - PLOT_LEFT - 2) / 7),
            1
        );
        let px = decode(&alerts_per_day(&month));
        assert!(text_pixels(&px, X_LABEL_AREA) > 40);
        let plot = (PLOT_LEFT, TITLE_Y + 20, WIDTH, PLOT_BOTTOM);
        assert_eq!(text_pixels(&px, plot), 0, "values do not fit in 31 slots");
    }

    #[test]
    fn charts_stay_small_enough_to_inline_in_an_email() {
        let month: Vec<(String, f64)> = (1..=31)
            .map(|d| (format!("Mon {d}"), 0.98 + d as f64 / 2000.0))
            .collect();
        for chart in [alerts_per_day(&week()), availability_per_day(&month)] {
            assert!(
                chart.png.len() < 30 * 1024,
                "{}: {}",
                chart.title,
                chart.png.len()
            );
        }
    }

    #[test]
    fn count_scales_end_on_a_round_number_and_percent_scales_zoom_in() {
        let s = Scale::counts(7.0);
        assert_eq!(s.ticks(), [0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(Scale::counts(0.0).ticks(), [0.0, 1.0]);
        let p = Scale::percent(99.2);
        assert_eq!(p.ticks(), [98.5, 99.0, 99.5, 100.0]);
        assert_eq!(p.label(98.5, 0), "98.5%");
        assert_eq!(p.label(99.731, 1), "99.73%");
        assert!(Scale::percent(100.0).ticks().len() >= 4);
        assert_eq!(Scale::percent(0.0).lo, 0.0);
    }

    #[test]
    fn the_alt_text_has_every_value() {
        let chart = availability_per_day(&[("Mon 16".into(), 0.9995), ("Tue 17".into(), 1.0)]);
        assert_eq!(
            chart.alt,
            "Mean availability per day: Mon 16: 99.95%, Tue 17: 100.00%"
        );
    }
}

//! PNG bar charts drawn in Rust (no fonts: the axis range and day labels are written next to
//! the image in HTML, so the PNG holds only bars and grid lines).

/// A rendered chart and the caption that explains its axes.
#[derive(Clone, Debug)]
pub struct Chart {
    pub content_id: &'static str,
    pub title: &'static str,
    pub caption: String,
    pub png: Vec<u8>,
}

const W: u32 = 560;
const H: u32 = 180;
const PAD: u32 = 12;
const BG: [u8; 3] = [255, 255, 255];
const GRID: [u8; 3] = [225, 228, 232];
const AXIS: [u8; 3] = [120, 120, 120];

struct Canvas {
    px: Vec<u8>,
}

impl Canvas {
    fn new() -> Self {
        Self {
            px: BG.repeat((W * H) as usize),
        }
    }

    fn rect(&mut self, x0: u32, y0: u32, x1: u32, y1: u32, c: [u8; 3]) {
        for y in y0.min(H)..y1.min(H) {
            for x in x0.min(W)..x1.min(W) {
                let i = ((y * W + x) * 3) as usize;
                self.px[i..i + 3].copy_from_slice(&c);
            }
        }
    }

    fn encode(self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, W, H);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let written = enc
            .write_header()
            .and_then(|mut w| w.write_image_data(&self.px));
        debug_assert!(written.is_ok(), "in-memory PNG encoding cannot fail");
        out
    }
}

/// Bars for `values` scaled from `lo` (bottom) to `hi` (top).
pub fn bars(values: &[f64], lo: f64, hi: f64, color: [u8; 3]) -> Vec<u8> {
    let mut c = Canvas::new();
    let plot_h = H - 2 * PAD;
    for i in 0..=4 {
        let y = PAD + plot_h * i / 4;
        c.rect(PAD, y, W - PAD, y + 1, GRID);
    }
    c.rect(PAD, H - PAD, W - PAD, H - PAD + 1, AXIS);
    let n = values.len().max(1) as u32;
    let slot = (W - 2 * PAD) / n;
    let span = (hi - lo).max(f64::EPSILON);
    for (i, v) in values.iter().enumerate() {
        let frac = ((v - lo) / span).clamp(0.0, 1.0);
        let bar_h = (frac * plot_h as f64).round() as u32;
        let x0 = PAD + slot * i as u32 + slot / 6;
        let x1 = PAD + slot * (i as u32 + 1) - slot / 6;
        c.rect(x0, H - PAD - bar_h, x1.max(x0 + 1), H - PAD, color);
    }
    c.encode()
}

/// Alert episodes started per day.
pub fn alerts_per_day(per_day: &[(String, u32)]) -> Chart {
    let max = per_day.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    let values: Vec<f64> = per_day.iter().map(|(_, n)| *n as f64).collect();
    Chart {
        content_id: "alerts-per-day",
        title: "Alert episodes per day",
        caption: format!(
            "{} (scale 0–{max}): {}",
            "Alert episodes per day",
            per_day
                .iter()
                .map(|(d, n)| format!("{d}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        png: bars(&values, 0.0, max as f64, [214, 69, 65]),
    }
}

/// Mean availability per day, on a zoomed scale so small dips are visible.
pub fn availability_per_day(per_day: &[(String, f64)]) -> Chart {
    let min = per_day.iter().map(|(_, v)| *v).fold(1.0, f64::min);
    let lo = ((min - 0.005) * 100.0).floor().min(99.0) / 100.0;
    let values: Vec<f64> = per_day.iter().map(|(_, v)| *v).collect();
    Chart {
        content_id: "availability-per-day",
        title: "Availability per day",
        caption: format!(
            "Availability per day (scale {:.0}%–100%): {}",
            lo * 100.0,
            per_day
                .iter()
                .map(|(d, v)| format!("{d}: {:.2}%", v * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        png: bars(&values, lo, 1.0, [46, 139, 87]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_a_valid_png_of_the_declared_size() {
        let chart = alerts_per_day(&[("Mon 16".into(), 2), ("Tue 17".into(), 0)]);
        let decoder = png::Decoder::new(std::io::Cursor::new(chart.png));
        let reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (W, H));
    }
}

//! Where a service's line counts (one per step over the window) change, whatever the
//! lines say: a sharp rise, found at the split that best separates a lower before from a
//! higher after (their difference weighed by how many points each side has, so one loud
//! step does not win) and held in both halves of the after; or a fall to silence of a
//! service that logged in most steps, silent for long enough that its old rate makes the
//! silence unlikely to be chance.

/// A change in a service's line rate; rates are lines per step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VolumeChange {
    /// The rate rose at point `at` from `before` to `after`.
    Rise { at: usize, before: f64, after: f64 },
    /// No line from point `at` on; `before` until then.
    Silence { at: usize, before: f64 },
}

/// How many times the rate before the rise the rate after must be.
const RISE_FACTOR: f64 = 3.0;
/// Least rate after a rise worth a look, in lines per minute.
const MIN_RISE_PER_MIN: f64 = 1.0;
/// Least lines a rise adds over the old rate (a few stray lines are no change).
const MIN_EXTRA_LINES: f64 = 5.0;
/// Points a side of a split needs.
const MIN_SIDE_POINTS: usize = 3;
/// Least silence, in seconds, and least lines the old rate would have written in it.
const MIN_SILENCE_SECS: f64 = 300.0;
const SILENCE_EXPECTED_LINES: f64 = 10.0;
/// Share of steps with lines that makes a service a steady logger (a job that writes a
/// batch once an hour is not silent between batches).
const STEADY_SHARE: f64 = 0.8;

/// The change in `counts` (one per `step_secs`), if any; a fall to silence first.
pub fn change(counts: &[f64], step_secs: f64) -> Option<VolumeChange> {
    if !(step_secs.is_finite() && step_secs > 0.0) {
        return None;
    }
    silence(counts, step_secs).or_else(|| rise(counts, step_secs))
}

fn silence(counts: &[f64], step_secs: f64) -> Option<VolumeChange> {
    let n = counts.len();
    let tail = counts.iter().rev().take_while(|c| **c <= 0.0).count();
    if tail == n || (tail as f64) * step_secs < MIN_SILENCE_SECS {
        return None;
    }
    let logged = &counts[..n - tail];
    // A service that began logging inside the window is judged from its first line on.
    let first = logged.iter().position(|c| *c > 0.0)?;
    let active = &logged[first..];
    if active.len() < MIN_SIDE_POINTS {
        return None;
    }
    let steps_with_lines = active.iter().filter(|c| **c > 0.0).count();
    let mean = active.iter().sum::<f64>() / active.len() as f64;
    let steady = steps_with_lines as f64 >= STEADY_SHARE * active.len() as f64;
    (steady && mean * tail as f64 >= SILENCE_EXPECTED_LINES).then_some(VolumeChange::Silence {
        at: n - tail,
        before: mean,
    })
}

fn rise(counts: &[f64], step_secs: f64) -> Option<VolumeChange> {
    let n = counts.len();
    if n < 2 * MIN_SIDE_POINTS {
        return None;
    }
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0.0);
    for c in counts {
        prefix.push(prefix.last().copied().unwrap_or(0.0) + c);
    }
    let mean = |from: usize, to: usize| (prefix[to] - prefix[from]) / (to - from).max(1) as f64;
    let mut best: Option<(usize, f64)> = None;
    for k in MIN_SIDE_POINTS..=n - MIN_SIDE_POINTS {
        let (b, a) = (mean(0, k), mean(k, n));
        let weight = ((k * (n - k)) as f64 / n as f64).sqrt();
        let score = (a - b) * weight;
        if a > b && best.is_none_or(|(_, s)| score > s) {
            best = Some((k, score));
        }
    }
    let (k, _) = best?;
    let (before, after) = (mean(0, k), mean(k, n));
    let min_after = MIN_RISE_PER_MIN * step_secs / 60.0;
    let extra = (after - before) * (n - k) as f64;
    if after < min_after || after < RISE_FACTOR * before || extra < MIN_EXTRA_LINES {
        return None;
    }
    // Held in both halves of the after: a single loud step is not a change of rate.
    let half = k + (n - k) / 2;
    let held = |m: f64| m > 0.0 && m >= 2.0 * before && m >= min_after / 2.0;
    (held(mean(k, half)) && held(mean(half, n))).then_some(VolumeChange::Rise {
        at: k,
        before,
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A steady rate with a little deterministic jitter.
    fn steady(n: usize, rate: f64) -> Vec<f64> {
        (0..n).map(|i| rate + ((i * 7) % 5) as f64 - 2.0).collect()
    }

    #[test]
    fn a_sharp_lasting_rise_is_found_where_it_began() {
        let mut c = steady(50, 10.0);
        c.extend(steady(15, 60.0));
        let Some(VolumeChange::Rise { at, before, after }) = change(&c, 60.0) else {
            panic!("no rise in {c:?}");
        };
        assert_eq!(at, 50);
        assert!((before - 10.0).abs() < 1.0 && (after - 60.0).abs() < 1.0);
    }

    #[test]
    fn a_new_stream_that_keeps_logging_is_a_rise_from_nothing() {
        let mut c = vec![0.0; 300];
        c.extend([3.0; 35]);
        assert_eq!(
            change(&c, 60.0),
            Some(VolumeChange::Rise {
                at: 300,
                before: 0.0,
                after: 3.0
            })
        );
    }

    #[test]
    fn one_loud_step_a_mild_rise_a_steady_rate_and_hourly_batches_are_no_change() {
        let mut spike = steady(60, 10.0);
        spike[58] = 400.0;
        assert_eq!(change(&spike, 60.0), None);
        let mut mild = steady(50, 10.0);
        mild.extend(steady(15, 20.0));
        assert_eq!(change(&mild, 60.0), None);
        assert_eq!(change(&steady(65, 10.0), 60.0), None);
        let batches: Vec<f64> = (0..180)
            .map(|i| if i % 60 < 2 { 500.0 } else { 0.0 })
            .collect();
        assert_eq!(change(&batches, 60.0), None);
        assert_eq!(change(&[], 60.0), None);
        assert_eq!(change(&[1.0, 2.0], f64::NAN), None);
    }

    #[test]
    fn a_steady_service_that_falls_silent_is_found_and_a_sparse_one_is_not() {
        let mut c = steady(50, 6.0);
        c.extend([0.0; 8]);
        assert_eq!(
            change(&c, 60.0),
            Some(VolumeChange::Silence {
                at: 50,
                before: c[..50].iter().sum::<f64>() / 50.0
            })
        );
        // Two minutes without lines is no silence yet.
        let mut short = steady(50, 6.0);
        short.extend([0.0; 2]);
        assert_eq!(change(&short, 60.0), None);
        // A line every ten minutes: twenty quiet minutes are normal.
        let sparse: Vec<f64> = (0..120)
            .map(|i| if i % 10 == 0 && i < 100 { 1.0 } else { 0.0 })
            .collect();
        assert_eq!(change(&sparse, 60.0), None);
    }
}

//! The spread of a condition's runs, shared by the plan of how many runs it gets
//! ([`super::options::RunPlan`]) and the judgement of its median ([`super::judgement`]).

/// The median of `walls` (the upper one of an even count); None without any.
pub(crate) fn median(walls: &[f64]) -> Option<f64> {
    let mut w = walls.to_vec();
    w.sort_by(f64::total_cmp);
    w.get(w.len() / 2).copied()
}

/// (max - min) / median of the middle runs, percent: all of up to 4, and of more without the
/// fastest and the slowest quarter, so one run a busy machine starved (or a lucky one) does
/// not widen it and more runs can narrow it. None with fewer than 2 runs: one run has no
/// spread.
pub(crate) fn middle_spread_pct(walls: &[f64]) -> Option<f64> {
    if walls.len() < 2 {
        return None;
    }
    let mut w = walls.to_vec();
    w.sort_by(f64::total_cmp);
    let cut = if w.len() > 4 { w.len() / 4 } else { 0 };
    let middle = &w[cut..w.len() - cut];
    let m = median(&w)?;
    let (lo, hi) = (middle.first()?, middle.last()?);
    Some(if m > 0.0 { (hi - lo) / m * 100.0 } else { 0.0 })
}

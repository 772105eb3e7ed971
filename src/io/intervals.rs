//! Disjoint intervals of files, keyed (file id, start) -> end: how the page cache keeps its
//! extents (in pages) and its CRC-checked ranges (in bytes). The two walks both need,
//! written once.

use std::collections::BTreeMap;
use std::ops::Bound;

pub type FileIntervals = BTreeMap<(u64, u64), u64>;

/// The interval of `file` holding `at`: (start, end).
pub fn holding(map: &FileIntervals, file: u64, at: u64) -> Option<(u64, u64)> {
    let (&(f, start), &end) = map.range(..=(file, at)).next_back()?;
    (f == file && end > at).then_some((start, end))
}

/// The intervals of `file` overlapping `[start, end)` (with `touching`, also those that
/// only meet it at either end), last first.
pub fn meeting(
    map: &FileIntervals,
    file: u64,
    start: u64,
    end: u64,
    touching: bool,
) -> Vec<(u64, u64)> {
    let upper = match touching {
        true => Bound::Included((file, end)),
        false => Bound::Excluded((file, end)),
    };
    // Disjoint intervals end in the order they start: walking back from the last one
    // starting before `end`, the first that ends before `start` ends the walk.
    map.range((Bound::Included((file, 0)), upper))
        .rev()
        .take_while(|(_, &e)| e > start || (touching && e == start))
        .map(|(&(_, s), &e)| (s, e))
        .collect()
}

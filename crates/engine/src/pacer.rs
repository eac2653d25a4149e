//! When each request is meant to go (open loop), and which target it goes to.
//!
//! Requests are numbered globally ("slots") across all threads. The schedule maps slot `i` to its
//! intended send time: the moment the cumulative count of a piecewise-linear rate reaches `i`.
//! A thread that claims slot `i` sends it at that time, or later if no connection is free; latency
//! is measured from the intended time either way, so stalls are not hidden (no coordinated
//! omission).

use std::sync::Arc;
use std::time::Duration;

use crate::spec::{Order, Stage, Target};

/// A piecewise-linear rate schedule, with the warm-up prepended as a constant-rate stage; or the
/// explicit times of a replay.
#[derive(Clone, Debug)]
pub struct Schedule {
    stages: Vec<StageIndex>,
    /// A replay's send times (µs from the start); `stages` is then empty.
    times_us: Option<Arc<[u64]>>,
    total: u64,
    /// When the schedule ends: its stages' length; a replay's cut, or its last request's time.
    length: Duration,
}

#[derive(Clone, Debug)]
struct StageIndex {
    /// Offset of the stage's start from the start of the schedule, in seconds.
    start_s: f64,
    duration_s: f64,
    start_rate: f64,
    end_rate: f64,
    /// Slots before this stage.
    first_slot: f64,
    /// Slots in this stage (fractional: the schedule is continuous).
    slots: f64,
}

impl Schedule {
    pub fn new(stages: &[Stage]) -> Schedule {
        let mut index = Vec::with_capacity(stages.len());
        let (mut start_s, mut first_slot, mut slack) = (0.0, 0.0, 0.0);
        for s in stages {
            let duration_s = s.duration.as_secs_f64();
            let slots = (s.start_rate + s.end_rate) / 2.0 * duration_s;
            // a length is whole nanoseconds: its count is known to what a nanosecond holds
            slack += s.start_rate.max(s.end_rate) * 1e-9;
            index.push(StageIndex {
                start_s,
                duration_s,
                start_rate: s.start_rate,
                end_rate: s.end_rate,
                first_slot,
                slots,
            });
            start_s += duration_s;
            first_slot = settle(first_slot + slots, slack);
        }
        // Slot i is sent when the count reaches i, so slots 0..=floor(total) fit, less one when
        // the total is a whole number (that slot would fall exactly on the end).
        let total = if first_slot.fract() == 0.0 { first_slot as u64 } else { first_slot.ceil() as u64 };
        Schedule { stages: index, times_us: None, total, length: Duration::from_secs_f64(start_s) }
    }

    /// A replay's schedule: slot `i` at `times_us[i]` (non-decreasing). With `cut`, only the
    /// times before it, and the schedule lasts `cut`; without, it lasts until its last request's
    /// time (that request included: it is due at the end).
    pub fn explicit(times_us: Arc<[u64]>, cut: Option<Duration>) -> Schedule {
        let (total, length) = match cut {
            Some(c) => (times_us.partition_point(|&t| u128::from(t) < c.as_micros()), c),
            None => (times_us.len(), Duration::from_micros(times_us.last().copied().unwrap_or(0))),
        };
        Schedule { stages: Vec::new(), times_us: Some(times_us), total: total as u64, length }
    }

    /// Slots in the whole schedule.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Length of the whole schedule: the run's end (its arrivals are all due by then).
    pub fn length(&self) -> Duration {
        self.length
    }

    /// The intended send time of slot `i`, from the start of the schedule; `None` past its end.
    pub fn time_of(&self, slot: u64) -> Option<Duration> {
        if slot >= self.total {
            return None;
        }
        if let Some(times) = &self.times_us {
            return Some(Duration::from_micros(times[slot as usize]));
        }
        let n = slot as f64;
        // Stages are few: a linear scan beats a binary search here.
        let st = self.stages.iter().rev().find(|s| s.first_slot <= n && s.slots > 0.0)?;
        let local = n - st.first_slot;
        let t = if st.start_rate == st.end_rate {
            local / st.start_rate
        } else {
            // count(t) = r0 t + (r1 - r0) t² / 2D = local: the positive root.
            let a = (st.end_rate - st.start_rate) / (2.0 * st.duration_s);
            let disc = st.start_rate * st.start_rate + 4.0 * a * local;
            (-st.start_rate + disc.max(0.0).sqrt()) / (2.0 * a)
        };
        Some(Duration::from_secs_f64(st.start_s + t.clamp(0.0, st.duration_s)))
    }
}

/// A count of slots that is a whole number but for rounding, made whole: else the slot that
/// falls on the count's end (a stage's, the schedule's) would be one of the schedule's, an
/// arrival due the instant the run ends that the schedule does not have. Rounding is floating
/// point's (a relative 1e-12: a few of f64's 2.2e-16 per stage; 100/s for 1.1 s is
/// 110.00000000000001) and the lengths' to the nanosecond (`slack`: what a nanosecond of each
/// stage holds at its highest rate; a warm-up of 10 requests at 600/s lasts 16,666,667 ns, which
/// hold 10.0000002). No rate and length a user writes is that close to a whole count without
/// being one: lengths are whole nanoseconds.
fn settle(count: f64, slack: f64) -> f64 {
    let whole = count.round();
    if (count - whole).abs() <= 1e-12 * whole.abs().max(1.0) + slack {
        whole
    } else {
        count
    }
}

/// How targets are picked: `Order`'s two ways, or a replay's target of each slot.
enum Pick {
    Sequential,
    Random,
    Replay(Arc<[u32]>),
}

/// Picks the target of each request: in turn, at random by weight, or as a replay names it. One
/// per thread; the random generator is a xorshift seeded per thread, so picking never locks or
/// allocates.
pub struct Picker {
    order: Pick,
    /// Cumulative weights, for the weighted random pick.
    cumulative: Vec<u64>,
    rng: u64,
}

impl Picker {
    pub fn new(targets: &[Target], order: Order, seed: u64) -> Picker {
        let mut sum = 0u64;
        let cumulative = targets
            .iter()
            .map(|t| {
                sum += u64::from(t.weight);
                sum
            })
            .collect();
        // xorshift must not start at zero.
        let rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let order = match order {
            Order::Sequential => Pick::Sequential,
            Order::Random => Pick::Random,
        };
        Picker { order, cumulative, rng }
    }

    /// A replay's picker: slot `i` goes to `targets[i]`.
    pub fn replay(targets: &[Target], replay: Arc<[u32]>) -> Picker {
        Picker { order: Pick::Replay(replay), ..Picker::new(targets, Order::Sequential, 1) }
    }

    /// The index of the next target. `slot` makes sequential order global across threads.
    pub fn pick(&mut self, slot: u64) -> usize {
        let n = self.cumulative.len();
        if n == 1 {
            return 0;
        }
        match &self.order {
            Pick::Sequential => (slot % n as u64) as usize,
            Pick::Replay(targets) => targets[slot as usize] as usize,
            Pick::Random => {
                self.rng ^= self.rng << 13;
                self.rng ^= self.rng >> 7;
                self.rng ^= self.rng << 17;
                let total = self.cumulative[n - 1];
                let r = self.rng % total;
                self.cumulative.partition_point(|&c| c <= r)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Addr;

    fn stage(secs: f64, r0: f64, r1: f64) -> Stage {
        Stage { duration: Duration::from_secs_f64(secs), start_rate: r0, end_rate: r1 }
    }

    #[test]
    fn constant_rate_spaces_slots_evenly() {
        let s = Schedule::new(&[stage(2.0, 100.0, 100.0)]);
        assert_eq!(s.total(), 200);
        assert_eq!(s.time_of(0), Some(Duration::ZERO));
        assert_eq!(s.time_of(1), Some(Duration::from_millis(10)));
        assert_eq!(s.time_of(150), Some(Duration::from_millis(1500)));
        assert_eq!(s.time_of(200), None);
        assert_eq!(s.length(), Duration::from_secs(2));
    }

    #[test]
    fn ramp_sends_its_integral() {
        // 0 -> 100 req/s over 10 s: 500 requests, the first half of them in the last ~30 %.
        let s = Schedule::new(&[stage(10.0, 0.0, 100.0)]);
        assert_eq!(s.total(), 500);
        let t = s.time_of(125).unwrap().as_secs_f64();
        // count(t) = 5 t²  =>  t = 5 s at 125.
        assert!((t - 5.0).abs() < 1e-9, "{t}");
        let last = s.time_of(499).unwrap().as_secs_f64();
        assert!(last < 10.0 && last > 9.98, "{last}");
    }

    #[test]
    fn stages_follow_each_other() {
        let s = Schedule::new(&[stage(1.0, 10.0, 10.0), stage(1.0, 0.0, 0.0), stage(1.0, 20.0, 20.0)]);
        assert_eq!(s.total(), 30);
        assert_eq!(s.length(), Duration::from_secs(3));
        assert_eq!(s.time_of(9), Some(Duration::from_millis(900)));
        // Slot 10 starts the third stage: the pause is skipped over in time, not in count.
        assert_eq!(s.time_of(10), Some(Duration::from_secs(2)));
        assert_eq!(s.time_of(11), Some(Duration::from_millis(2050)));
    }

    #[test]
    fn a_whole_count_in_floating_point_has_no_slot_on_the_end() {
        // 100/s for 1.1 s: 110.00000000000001 in f64; 300/s for 140 ms: 42.00000000000001
        for (secs, rate, whole) in [(1.1, 100.0, 110), (0.14, 300.0, 42), (2.3, 100.0, 230), (0.7, 700.0, 490)] {
            let s = Schedule::new(&[stage(secs, rate, rate)]);
            assert_eq!(s.total(), whole, "{rate}/s for {secs} s");
            assert!(s.time_of(whole - 1).unwrap() < s.length());
            assert_eq!(s.time_of(whole), None);
        }
        // a warm-up of 0.1 s at 600/s before 2 s: 60 + 1,200 slots, the 60th due as the
        // measured phase starts, the last before the end
        let warm = stage(0.1, 600.0, 600.0);
        let s = Schedule::new(&[warm, stage(2.0, 600.0, 600.0)]);
        assert_eq!(Schedule::new(&[warm]).total(), 60);
        assert_eq!(s.total(), 1260);
        assert_eq!(s.time_of(60), Some(Duration::from_millis(100)));
        assert!(s.time_of(1259).unwrap() < s.length());
        // what is not whole stays so
        assert_eq!(Schedule::new(&[stage(1.5, 3.0, 3.0)]).total(), 5);
        assert_eq!(settle(4.5, 0.0), 4.5);
        assert_eq!(settle(1e9 + 0.001, 0.0), 1e9 + 0.001);
        // a warm-up of 10 requests at 600/s: 10/600 s to the nanosecond holds 10.0000002
        let warm = Duration::from_secs_f64(10.0 / 600.0);
        let warm = Stage { duration: warm, start_rate: 600.0, end_rate: 600.0 };
        assert_eq!(Schedule::new(&[warm]).total(), 10);
        let s = Schedule::new(&[warm, stage(2.0, 600.0, 600.0)]);
        assert_eq!(s.total(), 1210);
        assert_eq!(s.time_of(10), Some(warm.duration));
        assert!(s.time_of(1209).unwrap() < s.length());
    }

    #[test]
    fn fractional_total_keeps_the_last_partial_slot() {
        let s = Schedule::new(&[stage(1.5, 3.0, 3.0)]);
        // 4.5 requests' worth: slots at 0, 1/3, 2/3, 1, 4/3.
        assert_eq!(s.total(), 5);
        assert!(s.time_of(4).unwrap() < Duration::from_millis(1500));
    }

    fn targets(weights: &[u32]) -> Vec<Target> {
        weights
            .iter()
            .map(|&w| Target {
                addr: Addr::Tcp(vec!["127.0.0.1:1".parse().unwrap()]),
                request: b"GET / HTTP/1.1\r\n\r\n".to_vec(),
                head: false,
                weight: w,
                tls_name: None,
            })
            .collect()
    }

    #[test]
    fn sequential_is_global_round_robin() {
        let t = targets(&[1, 1, 1]);
        let mut p = Picker::new(&t, Order::Sequential, 1);
        let picks: Vec<usize> = (0..6).map(|s| p.pick(s)).collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn random_follows_weights() {
        let t = targets(&[1, 3]);
        let mut p = Picker::new(&t, Order::Random, 42);
        let n = 40_000;
        let ones = (0..n).filter(|&s| p.pick(s) == 1).count() as f64;
        let share = ones / n as f64;
        assert!((share - 0.75).abs() < 0.02, "{share}");
    }

    #[test]
    fn explicit_times_are_sent_as_given() {
        let times: Arc<[u64]> = vec![0, 0, 1_500, 250_000, 2_000_000].into();
        let s = Schedule::explicit(Arc::clone(&times), None);
        assert_eq!(s.total(), 5);
        assert_eq!(s.length(), Duration::from_secs(2)); // its last request's time
        assert_eq!(s.time_of(1), Some(Duration::ZERO));
        assert_eq!(s.time_of(2), Some(Duration::from_micros(1_500)));
        assert_eq!(s.time_of(4), Some(Duration::from_secs(2)));
        assert_eq!(s.time_of(5), None);
    }

    #[test]
    fn a_duration_cuts_explicit_times() {
        let times: Arc<[u64]> = vec![0, 999_999, 1_000_000, 3_000_000].into();
        let s = Schedule::explicit(times, Some(Duration::from_secs(1)));
        // only the times before the cut: slot 2 falls exactly on it
        assert_eq!(s.total(), 2);
        assert_eq!(s.length(), Duration::from_secs(1));
        assert_eq!(s.time_of(2), None);
    }

    #[test]
    fn replay_picks_each_slots_target() {
        let t = targets(&[1, 1, 1]);
        let mut p = Picker::replay(&t, vec![2, 2, 0, 1].into());
        let picks: Vec<usize> = (0..4).map(|s| p.pick(s)).collect();
        assert_eq!(picks, vec![2, 2, 0, 1]);
    }
}

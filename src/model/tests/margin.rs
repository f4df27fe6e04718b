//! How close a decision is to turning over: worked out by hand on two single-CPU groups.

use super::stats::{cpus, params};
use crate::model::margin::{flip_margin, flips_by_one_task, MARGIN_STEPS};
use crate::model::stats::{decide, group_stats, CpuSample, GroupStats, GroupType};

/// A CPU running two CFS tasks, its run queue's load average `load`.
fn two_tasks(load: u64) -> CpuSample {
    CpuSample {
        not_cfs: 0,
        nr_running: 2,
        load_avg: load,
        runnable_avg: 2048,
        util_avg: 1024,
        util_est: 0,
        capacity: 1024,
        idle: false,
    }
}

fn groups(samples: &[CpuSample], dst_idle: bool) -> Vec<GroupStats> {
    let p = params(110);
    ["0", "1"]
        .iter()
        .enumerate()
        .map(|(i, c)| group_stats(&cpus(c), samples, 1, &p, i == 0, dst_idle))
        .collect()
}

#[test]
fn a_decision_at_the_imbalance_pct_turns_over_with_half_a_percent() {
    // Both overloaded, local 1000 and busiest 1095 per capacity: 100 * 1095 <= 110 * 1000,
    // balanced (find_busiest_group's imbalance_pct test); local's sums 0.5% lower (995)
    // make it 109500 > 109450, and calculate_imbalance pulls.
    let g = groups(&[two_tasks(1000), two_tasks(1095)], false);
    assert!(g.iter().all(|g| g.group_type == GroupType::Overloaded));
    let p = params(110);
    assert_eq!(decide(&g, [0, 1], 0, &p, false).imbalance, 0);
    assert_eq!(
        flip_margin(&g, &[0, 1], 0, &p, false),
        Some(MARGIN_STEPS[0])
    );
    // 30% apart (the threshold 10%): 5% on each side leaves 1235 against 1050, still pulled.
    let far = groups(&[two_tasks(1000), two_tasks(1300)], false);
    assert!(decide(&far, [0, 1], 0, &p, false).imbalance > 0);
    assert_eq!(flip_margin(&far, &[0, 1], 0, &p, false), None);
}

#[test]
fn a_decision_on_a_single_task_turns_over_with_one_task_more() {
    // An idle destination and one busy CPU with a single CFS task: balanced whatever its
    // load (busiest->sum_h_nr_running == 1 is left alone), so no PELT change turns it; with
    // a second task queued there it is overloaded and the idle CPU pulls.
    let mut busy = two_tasks(1024);
    busy.nr_running = 1;
    let idle = CpuSample {
        capacity: 1024,
        idle: true,
        ..CpuSample::default()
    };
    let g = groups(&[idle, busy], true);
    let p = params(110);
    assert_eq!(decide(&g, [0, 1], 0, &p, true).imbalance, 0);
    assert_eq!(flip_margin(&g, &[0, 1], 0, &p, true), None);
    assert!(flips_by_one_task(&g, &[0, 1], 0, &p, true));
    let two = groups(&[idle, two_tasks(2048)], true);
    assert!(decide(&two, [0, 1], 0, &p, true).imbalance > 0);
}

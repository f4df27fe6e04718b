//! Agreement scores that say what a trivial answer would get: from the counts of a 2x2
//! table (the kernel's verdict against the model's, balanced or not) the model's recall and
//! precision on the kernel's imbalanced searches, Cohen's kappa, and beside each the share a
//! constant answer scores; and, per kernel migration type, how often the model names it.
//!
//! Pure arithmetic over counts; no state beyond them.

use serde::Serialize;
use std::collections::BTreeMap;

/// What the counts of a balanced / not balanced table give, with the constant answers'
/// scores beside them. Every share is `None` when its denominator is 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BinaryScores {
    /// Searches judged.
    pub searches: u64,
    /// The kernel found an imbalance (the positive class).
    pub kernel_imbalanced: u64,
    /// The model found an imbalance.
    pub model_imbalanced: u64,
    /// Both found one (true positives).
    pub both_imbalanced: u64,
    /// Share of searches where both agree (balanced or not).
    pub agreement: Option<f64>,
    /// Share the commonest kernel verdict scores when always answered.
    pub constant_agreement: Option<f64>,
    /// The commonest kernel verdict ("balanced" or "imbalanced").
    pub constant_answer: &'static str,
    /// Of the kernel's imbalanced searches, the share the model also found imbalanced.
    pub recall: Option<f64>,
    /// Of the model's imbalanced searches, the share the kernel also found imbalanced.
    pub precision: Option<f64>,
    /// The precision of answering "imbalanced" every time (its recall is 1): the kernel's
    /// imbalanced share.
    pub constant_precision: Option<f64>,
    /// Cohen's kappa: agreement beyond what the two answers' own rates give by chance (0
    /// for any constant answer, 1 for perfect agreement).
    pub kappa: Option<f64>,
}

/// `n / of`, or `None` when there is nothing to divide by.
pub(crate) fn share(n: u64, of: u64) -> Option<f64> {
    (of > 0).then(|| n as f64 / of as f64)
}

impl BinaryScores {
    /// Scores of a table given as searches, kernel-imbalanced, model-imbalanced and
    /// both-imbalanced counts.
    pub fn new(searches: u64, kernel_imb: u64, model_imb: u64, both_imb: u64) -> BinaryScores {
        let n = searches;
        // Both balanced: the searches neither side found imbalanced.
        let both_bal = (n + both_imb).saturating_sub(kernel_imb + model_imb);
        let agree = both_imb + both_bal;
        let kernel_bal = n - kernel_imb;
        let commonest = kernel_bal.max(kernel_imb);
        let kappa = (n > 0).then(|| {
            let nf = n as f64;
            let po = agree as f64 / nf;
            let pe = (kernel_imb as f64 * model_imb as f64
                + kernel_bal as f64 * (n - model_imb) as f64)
                / (nf * nf);
            if pe >= 1.0 {
                // Both answered one class throughout: agreement is all chance.
                if po >= 1.0 {
                    1.0
                } else {
                    0.0
                }
            } else {
                (po - pe) / (1.0 - pe)
            }
        });
        BinaryScores {
            searches: n,
            kernel_imbalanced: kernel_imb,
            model_imbalanced: model_imb,
            both_imbalanced: both_imb,
            agreement: share(agree, n),
            constant_agreement: share(commonest, n),
            constant_answer: if kernel_imb > kernel_bal {
                "imbalanced"
            } else {
                "balanced"
            },
            recall: share(both_imb, kernel_imb),
            precision: share(both_imb, model_imb),
            constant_precision: share(kernel_imb, n),
            kappa,
        }
    }
}

/// One kernel migration type: the pairs both sides found imbalanced where the kernel chose
/// it, and of those, where the model chose it too.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TypeCount {
    /// Pairs with this kernel type.
    pub pairs: u64,
    /// Of those, the model's type is the same.
    pub agree: u64,
    /// `agree / pairs`.
    pub agreement: Option<f64>,
}

/// Migration-type agreement per kernel type, with what the commonest type would score.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TypeScores {
    /// Per kernel type ("load", "util", "task", "misfit").
    pub by_type: BTreeMap<String, TypeCount>,
    /// The kernel's commonest type among the pairs.
    pub constant_answer: Option<String>,
    /// The share that type has among the pairs: what answering it every time scores.
    pub constant_agreement: Option<f64>,
}

impl TypeScores {
    /// Scores from "kernel type" -> (pairs, agreeing) counts.
    pub fn new(counts: &BTreeMap<String, (u64, u64)>) -> TypeScores {
        let total: u64 = counts.values().map(|c| c.0).sum();
        let top = counts
            .iter()
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.0.cmp(a.0)));
        TypeScores {
            by_type: counts
                .iter()
                .map(|(k, &(pairs, agree))| {
                    let c = TypeCount {
                        pairs,
                        agree,
                        agreement: share(agree, pairs),
                    };
                    (k.clone(), c)
                })
                .collect(),
            constant_answer: top.map(|(k, _)| k.clone()),
            constant_agreement: top.and_then(|(_, c)| share(c.0, total)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_answer_scores_kappa_zero_and_the_majority_share() {
        // 1000 searches, the kernel found 43 imbalanced, the model answers "balanced" always.
        let s = BinaryScores::new(1000, 43, 0, 0);
        assert_eq!(s.agreement, Some(0.957));
        assert_eq!(s.constant_agreement, Some(0.957));
        assert_eq!(s.constant_answer, "balanced");
        assert_eq!(s.kappa, Some(0.0));
        assert_eq!(s.recall, Some(0.0));
        assert_eq!(s.precision, None);
        assert_eq!(s.constant_precision, Some(0.043));
    }

    #[test]
    fn kappa_by_hand() {
        // kernel imb 40, model imb 30, both 25, n 100: both balanced 55, po 0.80;
        // pe = 0.4*0.3 + 0.6*0.7 = 0.54; kappa = 0.26/0.46.
        let s = BinaryScores::new(100, 40, 30, 25);
        assert!((s.kappa.unwrap() - 0.26 / 0.46).abs() < 1e-12);
        assert_eq!(s.recall, Some(25.0 / 40.0));
        assert_eq!(s.precision, Some(25.0 / 30.0));
        assert_eq!(s.agreement, Some(0.8));
        let perfect = BinaryScores::new(10, 3, 3, 3);
        assert_eq!(perfect.kappa, Some(1.0));
        let all_balanced = BinaryScores::new(10, 0, 0, 0);
        assert_eq!(all_balanced.kappa, Some(1.0));
        assert_eq!(BinaryScores::new(0, 0, 0, 0).kappa, None);
    }

    #[test]
    fn type_scores_name_the_commonest_type() {
        let mut c = BTreeMap::new();
        c.insert("task".to_string(), (95, 95));
        c.insert("util".to_string(), (63, 56));
        c.insert("load".to_string(), (8, 8));
        let t = TypeScores::new(&c);
        assert_eq!(t.constant_answer.as_deref(), Some("task"));
        assert_eq!(t.constant_agreement, Some(95.0 / 166.0));
        assert_eq!(t.by_type["util"].agreement, Some(56.0 / 63.0));
    }
}

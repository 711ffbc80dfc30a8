//! Searching the household's simulated catalogue.

use super::{CountersignError, CountersignService, MAX_SEARCH_RESULTS, QUERY_MAX_CHARS};
use super::{ProductMatch, SearchOutput, VariantOffer};
use crate::countersign::household::Product;
use crate::countersign::money::dollars;
use crate::countersign::refusal::Refusal;

impl CountersignService {
    /// Products whose title, variants, category or merchant share words with `query`.
    pub fn search(
        &self,
        query: &str,
        max_results: usize,
    ) -> Result<SearchOutput, CountersignError> {
        let length = query.chars().count();
        if length > QUERY_MAX_CHARS {
            return Err(Refusal::SearchTooLong { chars: length }.into());
        }
        if !(1..=MAX_SEARCH_RESULTS).contains(&max_results) {
            return Err(Refusal::SearchResultsOutOfRange.into());
        }
        let wanted = search_words(query);
        let catalogue = &self.data.catalogue;
        let mut scored: Vec<(usize, usize, &Product)> = catalogue
            .products
            .iter()
            .enumerate()
            .map(|(index, product)| {
                let mut text = format!(
                    "{} {} {}",
                    product.title,
                    product.category.replace('_', " "),
                    catalogue.merchant_name(&product.merchant)
                );
                for variant in &product.variants {
                    text.push(' ');
                    text.push_str(&variant.label);
                }
                let have = search_words(&text);
                let score = wanted.iter().filter(|word| have.contains(word)).count();
                (score, index, product)
            })
            .filter(|(score, _, _)| wanted.is_empty() || *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let results: Vec<ProductMatch> = scored
            .into_iter()
            .take(max_results)
            .map(|(_, _, product)| ProductMatch {
                product_id: product.id.clone(),
                title: product.title.clone(),
                merchant: catalogue.merchant_name(&product.merchant).to_owned(),
                category: product.category.clone(),
                listing_text: product.text.clone(),
                variants: product
                    .variants
                    .iter()
                    .map(|v| VariantOffer {
                        variant_id: v.id.clone(),
                        label: v.label.clone(),
                        unit_price_cents: v.unit_price_cents,
                        price: dollars(v.unit_price_cents),
                    })
                    .collect(),
            })
            .collect();
        let say = match results.as_slice() {
            [] => "I found nothing like that in the catalogue.".to_owned(),
            [only] => format!("I found {} from {}.", only.title, only.merchant),
            many => format!(
                "I found {} products; the closest is {} from {}.",
                many.len(),
                many[0].title,
                many[0].merchant
            ),
        };
        Ok(SearchOutput {
            results,
            say: crate::speech::sanitize::sanitize(&say, 300),
        })
    }
}

/// Lower-case words of at least two letters, without filler words, singular.
fn search_words(text: &str) -> Vec<String> {
    const FILLER: &[&str] = &[
        "a", "an", "the", "some", "me", "of", "for", "please", "buy", "order", "get", "find",
        "want", "need", "and", "or", "to", "with", "from", "pack", "packs",
    ];
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.len() >= 2 && !FILLER.contains(word))
        .map(|word| {
            word.strip_suffix("es")
                .filter(|stem| stem.ends_with(['s', 'x', 'h']))
                .or_else(|| word.strip_suffix('s').filter(|stem| stem.len() >= 2))
                .unwrap_or(word)
                .to_owned()
        })
        .collect()
}

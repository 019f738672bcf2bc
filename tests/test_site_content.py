"""The offline sites' content is JSON package data beside each site (webeval.benchmarks.local.site_content): it reads
into the tables the sites' code unpacks, every cross-reference in it holds, and a record with a field misspelt fails
at import, not on the page that would show it."""

from __future__ import annotations

import pytest

from webeval.benchmarks.local.site_content import rows, site_content
from webeval.benchmarks.local.sites.dictionary import dictionary_data as dictionary
from webeval.benchmarks.local.sites.flights import flights_data as flights
from webeval.benchmarks.local.sites.recipes import recipes_data as recipes
from webeval.benchmarks.local.sites.shop import shop_data as shop


def test_each_site_has_the_content_its_pages_promise():
    assert (len(recipes.RECIPES), len(recipes.CATEGORIES)) == (30, 6)
    assert (len(shop.PRODUCTS), len(shop.CATEGORIES)) == (30, 5)
    assert len(dictionary.ENTRIES) == 37
    assert (len(flights.AIRPORTS), len(flights.AIRLINES)) == (12, 8)
    # One record a key: a repeated slug or SKU would hide a record behind another.
    assert len(recipes.BY_SLUG) == 30 and len(shop.BY_SKU) == 30 and len(dictionary.BY_SLUG) == 37


def test_the_tables_are_the_tuples_the_code_unpacks():
    cal, fat, carbs, protein, sodium = recipes.BY_SLUG["buttermilk-pancakes"]["nutrition"]
    assert (cal, fat, carbs, protein, sodium) == (290, 11, 40, 8, 620)
    assert shop.PRICE_BANDS[-1] == ("over-1000", "$1,000 & above", 100000, None)
    assert shop.BY_SKU["LAP-101"]["specs"][0] == ("Display", "14\" OLED, 2880 × 1800")
    guide, definition, examples = dictionary.BY_SLUG["cafe"]["senses"][0]
    assert guide == "RESTAURANT" and examples[0].startswith("We had lunch")
    assert flights.CABINS[0] == ("economy", "Economy", 1.0) and isinstance(flights.CABINS[0][2], float)
    assert flights.AIRPORTS[0][:7] == ("JFK", "New York", "John F. Kennedy International", "United States", 40.64,
                                       -73.78, -5)


def test_every_reference_in_the_content_names_a_record():
    categories = {slug for slug, *_ in recipes.CATEGORIES}
    assert {r["category"] for r in recipes.RECIPES} == categories
    assert {p["category"] for p in shop.PRODUCTS} == set(shop.CATEGORY_NAMES)
    assert set(shop.FEATURED) <= set(shop.BY_SKU)
    assert {dictionary.WORD_OF_THE_DAY, *dictionary.POPULAR} <= set(dictionary.BY_SLUG)
    for _, _, options, answer in dictionary.QUIZ:
        assert answer in options and set(options) <= set(dictionary.BY_SLUG)
    codes = {code for code, *_ in flights.AIRPORTS}
    assert set(flights.HUBS) <= codes and {code for route in flights.POPULAR for code in route} <= codes


def test_a_record_with_a_misspelt_field_is_refused_naming_its_fields():
    content = site_content("webeval.benchmarks.local.sites.flights", "flights.json")
    assert rows(content["seats"], "value", "label") == flights.SEATS
    misspelt = [*content["seats"][:1], {"value": "window", "lable": "Window"}]
    with pytest.raises(ValueError) as refused:
        rows(misspelt, "value", "label")
    assert str(refused.value) == ("a record with fields ['lable', 'value'] where ['label', 'value'] were expected: "
                                  "{'value': 'window', 'lable': 'Window'}")
    with pytest.raises(ValueError, match="with fields \\['extra', 'label', 'value'\\]"):
        rows([{"value": "window", "label": "Window", "extra": 1}], "value", "label")

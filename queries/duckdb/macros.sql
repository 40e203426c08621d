-- Functions the DuckDB twins share, created when the engine opens its database.

-- BigQuery's LOWER: ICU's full, context-sensitive lower case, where DuckDB's lower() maps one code
-- point to one. Two mappings differ (probed on the GoogleSQL reference engine): İ (U+0130) lowers to
-- i and a combining dot above (U+0069 U+0307), not to i; and a capital sigma lowers to final ς where
-- Unicode's Final_Sigma holds (a cased letter before it, then only case-ignorable characters; no
-- cased letter after it but through case-ignorable ones), else to σ. Without lookaround in RE2, the
-- sigmas followed by a cased letter go first (twice: a match swallows the letter after it, which may
-- be the next sigma); each one left is then final when a cased letter comes before it. "Cased" is
-- Lu, Ll, Lt and the Other_Lowercase/Other_Uppercase letters, symbols and numerals; "case-ignorable"
-- the marks, format characters, modifiers and the apostrophes, dots and colons Unicode lists. Text
-- with neither letter is lowered as it is: a replace() on every message made a search 5x slower.
CREATE OR REPLACE MACRO bigquery_lower(s) AS lower(
  CASE WHEN contains(s, 'Σ') THEN
    regexp_replace(
      regexp_replace(
        regexp_replace(replace(s, 'İ', 'i̇'), 'Σ([\p{Mn}\p{Me}\p{Cf}\p{Lm}\p{Sk}\x{27}.:\x{B7}\x{387}\x{55F}\x{5F4}\x{2018}\x{2019}\x{2024}\x{2027}\x{FE13}\x{FE52}\x{FE55}\x{FF07}\x{FF0E}\x{FF1A}]*[\p{Lu}\p{Ll}\p{Lt}\x{AA}\x{BA}\x{2160}-\x{217F}\x{24B6}-\x{24E9}\x{1F130}-\x{1F149}\x{1F150}-\x{1F169}\x{1F170}-\x{1F189}])', 'σ\1', 'g'),
        'Σ([\p{Mn}\p{Me}\p{Cf}\p{Lm}\p{Sk}\x{27}.:\x{B7}\x{387}\x{55F}\x{5F4}\x{2018}\x{2019}\x{2024}\x{2027}\x{FE13}\x{FE52}\x{FE55}\x{FF07}\x{FF0E}\x{FF1A}]*[\p{Lu}\p{Ll}\p{Lt}\x{AA}\x{BA}\x{2160}-\x{217F}\x{24B6}-\x{24E9}\x{1F130}-\x{1F149}\x{1F150}-\x{1F169}\x{1F170}-\x{1F189}])', 'σ\1', 'g'),
      '([\p{Lu}\p{Ll}\p{Lt}\x{AA}\x{BA}\x{2160}-\x{217F}\x{24B6}-\x{24E9}\x{1F130}-\x{1F149}\x{1F150}-\x{1F169}\x{1F170}-\x{1F189}][\p{Mn}\p{Me}\p{Cf}\p{Lm}\p{Sk}\x{27}.:\x{B7}\x{387}\x{55F}\x{5F4}\x{2018}\x{2019}\x{2024}\x{2027}\x{FE13}\x{FE52}\x{FE55}\x{FF07}\x{FF0E}\x{FF1A}]*)Σ', '\1ς', 'g')
  WHEN contains(s, 'İ') THEN replace(s, 'İ', 'i̇')
  ELSE s END);

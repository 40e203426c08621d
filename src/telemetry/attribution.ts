// Who and what an engine query is charged to, in one normalised form for the BigQuery job label, the
// metric and the span: BigQuery's label rules, and a bounded number of distinct credentials.

/** Label values allow lowercase letters, digits, `_` and `-` only: `logs.all` becomes `logs_all`. */
export function labelValue(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, "_")
    .slice(0, 63);
}

/** Past the bound, every further credential is charged here. */
export const OTHER_CREDENTIALS = "other";

/** The keys of API_KEYS (named api-key-<n>, a form no other credential may take) are charged as one. */
const API_KEYS = /^api-key-\d+$/;

/** The first `max` distinct credentials keep their own label; the rest share `other`. */
export class CredentialLabels {
  private readonly known = new Map<string, string>();
  max: number;

  constructor(max: number) {
    this.max = max;
  }

  of(credential: string): string {
    const known = this.known.get(credential);
    if (known !== undefined) return known;
    if (this.known.size >= this.max) return OTHER_CREDENTIALS;
    const label = API_KEYS.test(credential) ? "api_keys" : labelValue(credential);
    this.known.set(credential, label);
    return label;
  }
}

/** The process's labels (METRICS_MAX_CREDENTIALS bounds them per process): jobs, metrics, spans. */
export const credentialLabels = new CredentialLabels(200);

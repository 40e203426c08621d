// One window of history read with one query on BigQuery, however many records it holds: the SQL
// has no LIMIT, and its result is read a chunk at a time as the reader pulls — BigQuery's result
// pages of the job (which run no query and bill no bytes), DuckDB's streamed result, a page of the
// window a query (DuckDB sorts what it answers and holds the sort while the result is open). A
// reader that pulls slowly holds one page, never the window; on DuckDB the open result holds a
// connection, its transaction and its sorted page, so the engine closes one nobody pulls from for
// a few seconds.
// Should the result be gone before the reader is done (BigQuery keeps one about a day, DuckDB closed
// an idle one), the query runs again from after the last row handed out, or from the start.
import {
  type QueryEngine,
  type QueryRequest,
  ResultGoneError,
  type Row,
} from "../engines/engine.ts";
import type { SqlParams } from "../engines/sql-params.ts";

/** What a read cost the engine: the bytes its queries processed (BigQuery's bill). */
export interface ReadCost {
  bytesProcessed: number;
}

/**
 * The rows of `request`'s query, in its order, a chunk (at most `maxRows` on BigQuery) per pull.
 * `after(row)` gives the parameters of the same query for the rows after `row` only.
 */
export async function* readWindow(
  engine: QueryEngine,
  request: QueryRequest,
  after: (row: Row) => SqlParams,
  cost: ReadCost,
): AsyncGenerator<Row[], void, undefined> {
  let last: Row | undefined;
  let goneUnread = false;
  for (;;) {
    const params = last === undefined ? request.params : after(last);
    const first = await engine.run({ ...request, params, keepResult: true, streamResult: true });
    cost.bytesProcessed += first.bytesProcessed ?? 0;
    const lastBefore = last;
    last = first.rows.at(-1) ?? last;
    try {
      if (first.rows.length > 0) yield first.rows;
      if (first.more) {
        for await (const rows of first.more) {
          last = rows.at(-1);
          yield rows;
        }
        // A page of the window (DuckDB's): the next query reads on from after its last row.
        if (first.more.truncated) continue;
        return;
      }
      for (let place = first.rest; place && engine.readPage; ) {
        const page = await engine.readPage(place, request);
        place = page.rest;
        last = page.rows.at(-1) ?? last;
        if (page.rows.length > 0) yield page.rows;
      }
      // An engine that kept no rest of a cut answer: read on from after its last row.
      if (!first.truncated || first.rest) return;
    } catch (error) {
      if (!(error instanceof ResultGoneError)) throw error;
      // Twice gone before a row was read: an engine that keeps nothing, not one to query forever.
      if (last === lastBefore && goneUnread) throw error;
      goneUnread = last === lastBefore;
    } finally {
      await first.more?.return();
    }
  }
}

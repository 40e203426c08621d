// Delivering an alert to its webhook, as the Standard Webhooks specification says: a JSON body
// {type, timestamp, data}, signed with HMAC-SHA256 under the rule's secret (webhook-id,
// webhook-timestamp, webhook-signature), retried with exponential backoff up to a bound. The same
// webhook-id on every attempt lets a receiver drop a repeat.
import { createHmac, timingSafeEqual } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Webhook } from "standardwebhooks";
import type { Delivery } from "./alert-states.ts";

export interface DeliveryOptions {
  /** Attempts at most, the first included. */
  attempts: number;
  /** The wait before the second attempt; each later one waits twice the one before. */
  firstRetryMs: number;
  /** How long one attempt may take. */
  timeoutMs: number;
  /** How long a replica delivering may go unheard before another takes its message over (Redis). */
  leaseMs: number;
}

export interface Message {
  id: string;
  type: Delivery["type"];
  data: unknown;
}

const MESSAGE_ID = /^msg_[\w-]{1,100}$/;

/** The message with an HMAC under the webhook's secret, to be kept where other replicas read it. */
export function sealMessage(message: Message, secret: string): string {
  const text = JSON.stringify(message);
  return `${text}.${hmac(text, secret)}`;
}

/**
 * The message a replica sealed under this secret; undefined for anything else: whatever can write
 * to Redis could otherwise have this service sign and send what it likes.
 */
export function unsealMessage(sealed: string, secret: string): Message | undefined {
  const at = sealed.lastIndexOf(".");
  const text = sealed.slice(0, at);
  const given = Buffer.from(sealed.slice(at + 1));
  const expected = Buffer.from(hmac(text, secret));
  if (at === -1 || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return undefined;
  }
  const message = JSON.parse(text) as Message;
  const known = message.type === "alert.firing" || message.type === "alert.resolved";
  return known && MESSAGE_ID.test(message.id) ? message : undefined;
}

function hmac(text: string, secret: string): string {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  return createHmac("sha256", key).update(text).digest("base64url");
}

/**
 * Posts the message until the receiver answers 2xx or the attempts run out; `failed` hears of each
 * failed attempt. Never throws: the outcome says how it went. Stops when `signal` aborts.
 */
export async function deliver(
  webhook: { url: string; secret: string },
  message: Message,
  options: DeliveryOptions,
  failed: (attempt: number, problem: string) => void,
  signal: AbortSignal,
): Promise<Delivery> {
  const signer = new Webhook(webhook.secret);
  const body = JSON.stringify({
    type: message.type,
    timestamp: new Date().toISOString(),
    data: message.data,
  });
  let status: number | undefined;
  let attempt = 0;
  while (attempt < options.attempts && !signal.aborted) {
    if (attempt > 0) {
      const wait = options.firstRetryMs * 2 ** (attempt - 1);
      await sleep(wait, undefined, { signal, ref: false }).catch(() => {});
      if (signal.aborted) break;
    }
    attempt++;
    const sentAt = new Date();
    status = undefined;
    try {
      const response = await fetch(webhook.url, {
        method: "POST",
        body,
        // A receiver's redirect is not followed: the signed body goes where the rule says only.
        redirect: "manual",
        headers: {
          "content-type": "application/json",
          "webhook-id": message.id,
          "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
          "webhook-signature": signer.sign(message.id, sentAt, body),
        },
        signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
      });
      status = response.status;
      await response.body?.cancel();
      if (status >= 200 && status < 300) {
        return {
          at: sentAt.getTime(),
          type: message.type,
          outcome: "delivered",
          attempts: attempt,
          status,
        };
      }
      failed(attempt, `answered ${status}`);
    } catch (error) {
      failed(
        attempt,
        (error as Error).name === "TimeoutError" ? "no answer in time" : "could not be reached",
      );
    }
  }
  return {
    at: Date.now(),
    type: message.type,
    outcome: "failed",
    attempts: attempt,
    ...(status !== undefined && { status }),
  };
}

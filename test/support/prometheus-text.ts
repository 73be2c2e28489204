import { getMetricsFromIterator, type PromHistogramData, type PromMetrics } from 'prom2javascript'
import { expect } from 'vitest'
import { prometheusContentType } from '../../src/prometheus.js'

/** The labels the exporter adds to every sample of the engine's meter. */
export const scopeLabels = { otel_scope_name: 'outflow', otel_scope_version: '0.1.0' }

/**
 * Scrape `url` (200, the exposition content type) and parse the text with prom2javascript, a Prometheus
 * text-format parser that also checks each histogram's `+Inf` bucket against its `_count`.
 */
export async function scrape(url: string, headers: Record<string, string> = {}): Promise<PromMetrics> {
  const response = await fetch(url, { headers })
  const text = await response.text()
  expect(response.status, text).toBe(200)
  expect(response.headers.get('content-type')).toBe(prometheusContentType)
  return parsePrometheusText(text)
}

/** The exposition text parsed with prom2javascript. */
export function parsePrometheusText(text: string): Promise<PromMetrics> {
  return getMetricsFromIterator(text.split('\n')[Symbol.iterator]())
}

/** The value of each sample of a counter or gauge, by its labels. */
export function samples(metrics: PromMetrics, name: string): { labels: Record<string, string>; value: number }[] {
  return (metrics[name]?.data ?? []) as { labels: Record<string, string>; value: number }[]
}

/** The series of a histogram. */
export function histograms(metrics: PromMetrics, name: string): PromHistogramData[] {
  return (metrics[name]?.data ?? []) as PromHistogramData[]
}

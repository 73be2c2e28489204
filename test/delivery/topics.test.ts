import { describe, expect, it } from 'vitest'
import { isTopicPattern, matchesTopic, topicAllowed } from '../../src/delivery/topics.js'

describe('matchesTopic', () => {
  const cases: [patterns: string[], topic: string, expected: boolean][] = [
    [['*'], 'order.created', true],
    [['*'], 'anything', true],
    [['order.created'], 'order.created', true],
    [['order.created'], 'order.paid', false],
    [['order.created'], 'order.created.v2', false],
    [['order.*'], 'order.created', true],
    [['order.*'], 'order.created.v2', true],
    [['order.*'], 'order', false],
    [['order.*'], 'orders.created', false],
    [['*.created'], 'order.created', true],
    [['*.created'], 'shop.order.created', true],
    [['*.created'], 'created', false],
    [['*.created'], 'order.created.v2', false],
    [['order.*.v2'], 'order.created.v2', true],
    [['order.*.v2'], 'order.created.paid.v2', true],
    [['order.*.v2'], 'order.v2', false],
    [['*.*'], 'a.b', true],
    [['*.*'], 'a', false],
    [['order*'], 'order.created', false],
    [['order*'], 'order*', true],
    [['user.deleted', 'order.*'], 'order.paid', true],
    [['user.deleted', 'order.*'], 'user.created', false],
    [[], 'order.created', false],
  ]
  it.each(cases)('%j matches %s: %s', (patterns, topic, expected) => {
    expect(matchesTopic(patterns, topic)).toBe(expected)
  })
})

describe('isTopicPattern', () => {
  it('treats only whole "*" segments as wildcards', () => {
    expect(isTopicPattern('order.*')).toBe(true)
    expect(isTopicPattern('*')).toBe(true)
    expect(isTopicPattern('order*')).toBe(false)
    expect(isTopicPattern('order.created')).toBe(false)
  })
})

describe('topicAllowed', () => {
  const allowList = ['order.created', 'order.paid', 'user.deleted']
  const cases: [topicOrPattern: string, expected: boolean][] = [
    ['*', true],
    ['order.created', true],
    ['order.refunded', false],
    ['order.*', true],
    ['*.deleted', true],
    ['invoice.*', false],
    ['*.created.*', false],
    ['order', false],
  ]
  it.each(cases)('with the allow-list, %s is accepted: %s', (topic, expected) => {
    expect(topicAllowed(allowList, topic)).toBe(expected)
  })

  it('accepts "*" even with an empty allow-list', () => {
    expect(topicAllowed([], '*')).toBe(true)
    expect(topicAllowed([], 'order.created')).toBe(false)
  })
})

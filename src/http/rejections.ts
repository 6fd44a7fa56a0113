/**
 * Engine refusals as HTTP answers. Input problems are 422 shape D naming the field (the order
 * body was already validated, so these are the engine's own checks: funds, size limits); a
 * missing order is the 404 shape C; an order that is no longer open is a 409.
 */
import type { Rejection } from '../engine/types.js';
import { errorC, errorE, type HttpError, validationError } from './errors.js';

export const ORDER_NOT_FOUND = 'Order not found';
export const TRADE_NOT_FOUND = 'Trade not found';

export const orderNotOpen = (status: string): HttpError =>
  errorE(409, `Order is not open (status: ${status}).`);

export function rejectionToHttp(rejection: Rejection): HttpError {
  switch (rejection.code) {
    case 'order_not_found':
      return errorC(404, ORDER_NOT_FOUND);
    case 'order_not_open':
      return errorE(409, 'Order is not open.');
    case 'unknown_market':
      return validationError({ [rejection.field ?? 'pair']: [rejection.message] });
    case 'invalid_price':
      return validationError({ [rejection.field ?? 'price']: [rejection.message] });
    // Conditional orders (decision E34): the field the engine names, else the one each code is about.
    case 'invalid_trigger_price':
    case 'trigger_would_fire':
      return validationError({ [rejection.field ?? 'trigger_price']: [rejection.message] });
    case 'price_not_allowed':
      return validationError({ [rejection.field ?? 'price']: [rejection.message] });
    case 'invalid_trailing_offset':
      return validationError({ [rejection.field ?? 'trailing_offset']: [rejection.message] });
    case 'invalid_conditional_controls':
      return validationError({ [rejection.field ?? 'time_in_force']: [rejection.message] });
    default:
      // invalid_volume, below_ordermin, too_large, insufficient_funds, and any future code.
      return validationError({ [rejection.field ?? 'volume']: [rejection.message] });
  }
}

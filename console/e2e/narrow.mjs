// The phone-wide window check both suites share (lib.mjs for *.e2e.mjs, ops-lib.mjs for
// *.ops.mjs): at 420 px the page must not scroll sideways (wide tables scroll inside
// their own box), and the view's key content must be on screen: each selector given
// matches at least one element, and every match is visible and lies within the window's
// width (not pushed off its right edge, not cut off at its left).

export const NARROW_WIDTH = 420;

/**
 * Shows `page` 420 px wide, checks it into `t` (the file's tally: `check(ok, message)`),
 * saves `<name>-narrow` with `screenshot(page, name)`, and puts the window back.
 * `visible`: selectors of the content an operator opens the view for.
 */
export async function checkNarrowWindow(page, name, t, screenshot, visible = []) {
  const before = page.viewportSize();
  await page.setViewportSize({ width: NARROW_WIDTH, height: 900 });
  await page.waitForTimeout(300);
  // Runs in the page.
  // eslint-disable-next-line no-undef
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  t.check(width <= NARROW_WIDTH, `${name} fits a ${NARROW_WIDTH} px window (page width ${width})`);
  for (const selector of visible) {
    const boxes = await page.locator(selector).evaluateAll((elements) =>
      elements.map((el) => {
        const r = el.getBoundingClientRect();
        const style = getComputedStyle(el); // eslint-disable-line no-undef
        return {
          left: r.left,
          right: r.right,
          width: r.width,
          height: r.height,
          shown: style.visibility !== 'hidden' && style.display !== 'none',
          text: (el.textContent ?? '').trim().slice(0, 40),
        };
      }),
    );
    const off = boxes.filter((b) => !b.shown || b.width === 0 || b.height === 0 || b.left < -0.5 || b.right > NARROW_WIDTH + 0.5);
    t.check(
      boxes.length > 0 && off.length === 0,
      boxes.length === 0
        ? `${name} at ${NARROW_WIDTH} px shows ${selector}: nothing matches`
        : `${name} at ${NARROW_WIDTH} px shows every ${selector} (${boxes.length})` +
            (off.length ? `; off screen or hidden: ${JSON.stringify(off)}` : ''),
    );
  }
  await screenshot(page, `${name}-narrow`);
  if (before) await page.setViewportSize(before);
}

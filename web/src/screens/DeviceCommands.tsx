import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { FormEvent } from 'react';
import type { Command, CommandSendRequest } from '../../../src/client/index.ts';
import { api } from '../api.ts';
import { dateTime, t } from '../i18n.ts';
import { ErrorNote, Field, Loading, Note } from '../ui.tsx';
import { queryKeys } from '../queryKeys.ts';

/** The attributes each type needs (docs/commands.md); numbers are sent as numbers. */
const ATTRIBUTES: Record<string, { name: string; numeric: boolean }[]> = {
  custom: [{ name: 'data', numeric: false }],
  positionPeriodic: [{ name: 'frequency', numeric: true }],
  setTimezone: [{ name: 'timezone', numeric: false }],
  outputControl: [
    { name: 'index', numeric: true },
    { name: 'data', numeric: false },
  ],
  sosNumber: [
    { name: 'index', numeric: true },
    { name: 'phone', numeric: false },
  ],
};

const typeName = (type: string) => t.commands.types[type] ?? type;

/** Commands of one device: what its protocol can take, saved commands, and the last 24 h with statuses kept live by the socket. */
export function DeviceCommands({ deviceId }: { deviceId: number }) {
  const queryClient = useQueryClient();
  const types = useQuery({ queryKey: queryKeys.commands.types(deviceId), queryFn: () => api.commandTypes(deviceId) });
  const history = useQuery({ queryKey: queryKeys.commands.history(deviceId), queryFn: () => api.commandHistory(deviceId) });
  const saved = useQuery({ queryKey: queryKeys.commands.saved, queryFn: () => api.savedCommands() });
  const [chosen, setChosen] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const [description, setDescription] = useState('');
  const [answer, setAnswer] = useState<Command | undefined>();

  const recordSent = (command: Command) => {
    setAnswer(command);
    queryClient.setQueryData<Command[]>(queryKeys.commands.history(deviceId), (known) =>
      known && !known.some((item) => item.id === command.id) ? [...known, command] : known,
    );
  };
  const send = useMutation({ mutationFn: (request: CommandSendRequest) => api.sendCommand(request), onMutate: () => setAnswer(undefined), onSuccess: recordSent });
  const save = useMutation({
    mutationFn: (request: { description: string; type: string; attributes: Record<string, unknown> }) => api.saveCommand(request),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: queryKeys.commands.saved }),
  });
  const remove = useMutation({ mutationFn: (id: number) => api.deleteSavedCommand(id), onSuccess: () => void queryClient.invalidateQueries({ queryKey: queryKeys.commands.saved }) });

  const available = types.data?.map((item) => item.type) ?? [];
  const type = available.includes(chosen) ? chosen : (available[0] ?? '');
  const fields = ATTRIBUTES[type] ?? [];
  const attributes = () => Object.fromEntries(fields.map((field) => [field.name, field.numeric ? Number(values[field.name]) : (values[field.name] ?? '')]));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    send.mutate({ deviceId, type, attributes: attributes() });
    if (description.trim()) save.mutate({ description: description.trim(), type, attributes: attributes() });
  };

  return (
    <section className="card" aria-labelledby="device-commands">
      <h2 id="device-commands">{t.commands.title}</h2>
      {types.isPending && <Loading />}
      <ErrorNote error={types.error} onRetry={() => void types.refetch()} />
      {types.isSuccess && available.length === 0 && <p>{t.commands.noTypes}</p>}
      {types.isSuccess && available.length === 1 && available[0] === 'custom' && <p className="hint">{t.commands.onlyCustom}</p>}
      {available.length > 0 && (
        <form onSubmit={submit} className="stack">
          <div className="field">
            <label htmlFor={`command-type-${deviceId}`}>{t.commands.type}</label>
            <select id={`command-type-${deviceId}`} value={type} onChange={(e) => setChosen(e.target.value)}>
              {available.map((name) => (
                <option key={name} value={name}>
                  {typeName(name)}
                </option>
              ))}
            </select>
          </div>
          {fields.map((field) => (
            <Field
              key={field.name}
              label={t.commands.attributes[field.name] ?? field.name}
              required
              inputMode={field.numeric ? 'numeric' : undefined}
              pattern={field.numeric ? '[0-9]+' : undefined}
              maxLength={1024}
              value={values[field.name] ?? ''}
              onChange={(e) => setValues({ ...values, [field.name]: e.target.value })}
            />
          ))}
          <Field label={t.commands.saveAs} maxLength={128} value={description} onChange={(e) => setDescription(e.target.value)} />
          <button type="submit" className="primary" disabled={send.isPending}>
            {send.isPending ? t.commands.sending : t.commands.send}
          </button>
        </form>
      )}
      {answer && <Note kind="success">{answer.status === 'queued' ? t.commands.queued : t.commands.sent}</Note>}
      <ErrorNote error={send.error ?? save.error ?? remove.error} />

      <h3>{t.commands.saved}</h3>
      <ErrorNote error={saved.error} onRetry={() => void saved.refetch()} />
      {saved.data?.length === 0 && <p>{t.commands.noSaved}</p>}
      <ul className="plain">
        {saved.data?.map((command) => (
          <li key={command.id} className="row wrap">
            <span>
              {command.description} <small>· {typeName(command.type)}{command.byAdministrator ? ` · ${t.commands.byAdministrator}` : ''}</small>
            </span>
            <button type="button" disabled={send.isPending} onClick={() => send.mutate({ deviceId, commandId: command.id })}>
              {t.commands.sendSaved(command.description)}
            </button>
            {!command.byAdministrator && (
              <button type="button" className="link" onClick={() => remove.mutate(command.id)}>
                {t.commands.deleteSaved(command.description)}
              </button>
            )}
          </li>
        ))}
      </ul>

      <h3>{t.commands.history}</h3>
      {history.isPending && <Loading />}
      <ErrorNote error={history.error} onRetry={() => void history.refetch()} />
      {history.data?.length === 0 && <p>{t.commands.noHistory}</p>}
      {history.data && history.data.length > 0 && (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">{t.commands.column}</th>
              <th scope="col">{t.commands.statusLabel}</th>
              <th scope="col">{t.commands.created}</th>
            </tr>
          </thead>
          <tbody aria-live="polite">
            {history.data.toReversed().map((command) => (
              <tr key={command.id}>
                <td data-label={t.commands.column}>{typeName(command.type)}</td>
                <td data-label={t.commands.statusLabel} className={`command-${command.status}`}>
                  {t.commands.status[command.status] ?? command.status}
                </td>
                <td data-label={t.commands.created}>{dateTime(command.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
